# shellcheck shell=bash
# Both APIs on scratch databases, for the tests that drive them from outside (`make fuzz`,
# the generated-client test). Source it after lib.sh; do not run it.
#
#   stack_start NAME    make the databases NAME_memory_PID and NAME_mail_PID, migrate them, create a team user with a
#                       read+write key and an enterprise project with an admin key, and start
#                       memory-api, mail-api and a send-worker (file provider) on free
#                       ports, with a queue prefix of their own and every quota multiplied
#                       by a million. Sets MEMORY_URL, MAIL_URL, MEMORY_KEY, MAIL_KEY,
#                       MAIL_PROJECT_ID, MAIL_DATABASE_URL, MEMORY_DATABASE_URL, MEMORY_USER_ID (the
#                       team user MEMORY_KEY acts for), WEBHOOK_SECRET (the deployment's provider webhook
#                       secret), TRACKING_SECRET (signs tracking links) and STACK_DIR (logs,
#                       the outbox).
#   stack_seed          one of each resource through the APIs (a product with its state, an
#                       identity kernel, a decision, a free-form entry, a workspace with an
#                       open drift event; a site, a contact, a campaign, a template, a
#                       suppression, a sent email, a conversion), so
#                       that list and read routes answer with data. Sets SEED_* ids and the
#                       sent email's tracking tokens (SEED_OPEN_TOKEN, SEED_CLICK_TOKEN,
#                       SEED_UNSUBSCRIBE_TOKEN).
#   stack_stop [RC]     stop the processes and drop the databases (an EXIT trap calls it;
#                       STACK_KEEP_DATABASES=1 keeps them, to look into a failure);
#                       STACK_DIR is removed too when RC is 0.
#
# The debug binaries of the target directory are used (BIN overrides).

STACK_BIN="${BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/debug}"
STACK_PG=postgres://postgres@127.0.0.1:5432
STACK_PIDS=()
STACK_DBS=()

stack_psql() {
    env -u PGPASSWORD PGPASSFILE=/dev/null/none PGOPTIONS='-c client_min_messages=warning' \
        psql -X -w -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p 5432 -U postgres -d postgres "$@"
}

# A TCP port nobody listens on right now.
stack_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# stack_json KEY: the value of KEY in the JSON object on stdin.
stack_json() {
    python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}

# stack_call METHOD URL KEY [BODY]: the answer's body; dies on a status other than 2xx.
stack_call() {
    local method=$1 url=$2 key=$3 body=${4:-} out status
    out="$(mktemp)"
    status="$(curl -sS -o "$out" -w '%{http_code}' -X "$method" -H "Authorization: Bearer $key" \
        ${body:+-H 'Content-Type: application/json' --data-binary "$body"} "$url")"
    if [[ $status != 2* ]]; then
        cat "$out" >&2
        rm -f "$out"
        die "$method $url answered $status"
    fi
    cat "$out"
    rm -f "$out"
}

stack_wait_ready() {
    local name=$1 pid=$2 url=$3
    for _ in $(seq 1 300); do
        # Every dependency up (an API's /readyz is its database alone; the broker connects in
        # the background).
        curl -sf "$url/healthz/details" 2>/dev/null | grep -q '"status":"ok"' && return 0
        kill -0 "$pid" 2>/dev/null || {
            tail -n 30 "$STACK_DIR/$name.log" >&2
            die "$name exited"
        }
        sleep 0.1
    done
    tail -n 30 "$STACK_DIR/$name.log" >&2
    die "$name not ready after 30 s"
}

stack_start() {
    local name=$1 b db memory_db mail_db user account memory_port mail_port worker_port kek prefix
    for b in memory-api mail-api send-worker admin; do
        [[ -x $STACK_BIN/$b ]] || die "no $STACK_BIN/$b: run cargo build --bins"
    done
    STACK_DIR="$(mktemp -d "${TMPDIR:-/tmp}/memmail-$name.XXXXXX")"
    memory_db="${name}_memory_$$"
    mail_db="${name}_mail_$$"
    for db in "$memory_db" "$mail_db"; do
        stack_psql -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db" ||
            die "could not create database $db"
        STACK_DBS+=("$db")
    done
    MEMORY_DATABASE__URL="$STACK_PG/$memory_db" "$STACK_BIN/memory-api" migrate >"$STACK_DIR/migrate.log" 2>&1 ||
        die "memory-api migrate failed (see $STACK_DIR/migrate.log)"
    MAIL_DATABASE__URL="$STACK_PG/$mail_db" "$STACK_BIN/mail-api" migrate >>"$STACK_DIR/migrate.log" 2>&1 ||
        die "mail-api migrate failed (see $STACK_DIR/migrate.log)"

    user="$("$STACK_BIN/admin" --memory-db "$STACK_PG/$memory_db" memory create-user \
        --email "$name@example.com" --tier team | stack_json user_id)"
    MEMORY_KEY="$("$STACK_BIN/admin" --memory-db "$STACK_PG/$memory_db" memory create-key \
        --user "$user" --env live --scopes read,write --name "$name" | stack_json key)"
    account="$("$STACK_BIN/admin" --mail-db "$STACK_PG/$mail_db" mail create-account --name "$name" |
        stack_json account_id)"
    MAIL_PROJECT_ID="$("$STACK_BIN/admin" --mail-db "$STACK_PG/$mail_db" mail create-project \
        --account "$account" --name "$name" --plan enterprise | stack_json project_id)"
    MAIL_KEY="$("$STACK_BIN/admin" --mail-db "$STACK_PG/$mail_db" mail create-key \
        --project "$MAIL_PROJECT_ID" --scope admin --name "$name" | stack_json key)"

    memory_port="$(stack_free_port)"
    mail_port="$(stack_free_port)"
    worker_port="$(stack_free_port)"
    MEMORY_URL="http://127.0.0.1:$memory_port"
    MAIL_URL="http://127.0.0.1:$mail_port"
    kek="$(head -c 32 /dev/urandom | base64)"
    WEBHOOK_SECRET="whsec_$(head -c 24 /dev/urandom | base64)"
    TRACKING_SECRET="$(head -c 32 /dev/urandom | base64)"
    # Queues of their own: the shared broker's other consumers must not take these jobs.
    prefix="$name-$$-"
    local common=(RUST_LOG="${RUST_LOG:-warn}" MEMORY_TELEMETRY__LOG_FORMAT=pretty
        MAIL_TELEMETRY__LOG_FORMAT=pretty MEMORY_RATE_LIMIT__SCALE=1000000
        MAIL_RATE_LIMIT__SCALE=1000000 MEMORY_HTTP__WORKERS=2 MAIL_HTTP__WORKERS=2
        MEMORY_BROKER__QUEUE_PREFIX="$prefix" MAIL_BROKER__QUEUE_PREFIX="$prefix"
        MEMORY_SECRETS__KEK="$kek" MAIL_SECRETS__KEK="$kek" MAIL_WEBHOOKS__SECRET="$WEBHOOK_SECRET"
        MAIL_TRACKING__SECRET="$TRACKING_SECRET" MAIL_TRACKING__BASE_URL="$MAIL_URL"
        MEMORY_DATABASE__URL="$STACK_PG/$memory_db" MAIL_DATABASE__URL="$STACK_PG/$mail_db"
        MAIL_OAUTH__SECURE_COOKIES=false MEMORY_OAUTH__SECURE_COOKIES=false
        MAIL_DNSBL__IP_ZONES=bl.example.invalid MAIL_DNSBL__DOMAIN_ZONES=dbl.example.invalid
        MAIL_OAUTH__REGISTER_PER_ADDRESS=1000000 MEMORY_OAUTH__REGISTER_PER_ADDRESS=1000000
        MEMORY_RENDER_VIDEO__WAIT_SECS=1)
    # memory-api's model endpoint is a port nothing listens on: a model run needs a configured
    # model to be accepted (422 LLM_NOT_CONFIGURED otherwise), and here it then fails
    # (LLM_FAILED); the tests drive the runs against a chat-completions server.
    local unanswering
    unanswering="$(stack_free_port)"
    env "${common[@]}" MEMORY_HTTP__BIND="127.0.0.1:$memory_port" \
        MEMORY_LLM__BASE_URL="http://127.0.0.1:$unanswering/v1" MEMORY_LLM__MODEL=unanswering \
        "$STACK_BIN/memory-api" serve >"$STACK_DIR/memory-api.log" 2>&1 </dev/null &
    STACK_PIDS+=($!)
    stack_wait_ready memory-api $! "$MEMORY_URL"
    env "${common[@]}" MAIL_HTTP__BIND="127.0.0.1:$mail_port" \
        "$STACK_BIN/mail-api" serve >"$STACK_DIR/mail-api.log" 2>&1 </dev/null &
    STACK_PIDS+=($!)
    stack_wait_ready mail-api $! "$MAIL_URL"
    env "${common[@]}" MAIL_WORKER__BIND="127.0.0.1:$worker_port" \
        MAIL_DELIVERY__DEFAULT_PROVIDER__KIND=file \
        MAIL_DELIVERY__DEFAULT_PROVIDER__DIRECTORY="$STACK_DIR/outbox" \
        "$STACK_BIN/send-worker" >"$STACK_DIR/send-worker.log" 2>&1 </dev/null &
    STACK_PIDS+=($!)
    stack_wait_ready send-worker $! "http://127.0.0.1:$worker_port"
    MAIL_DATABASE_URL="$STACK_PG/$mail_db"
    MEMORY_DATABASE_URL="$STACK_PG/$memory_db"
    MEMORY_USER_ID="$user"
    export MEMORY_URL MAIL_URL MEMORY_KEY MAIL_KEY MAIL_PROJECT_ID STACK_DIR WEBHOOK_SECRET TRACKING_SECRET \
        MAIL_DATABASE_URL MEMORY_DATABASE_URL MEMORY_USER_ID
    log "$name: memory-api $MEMORY_URL, mail-api $MAIL_URL, send-worker; logs in $STACK_DIR"
}

stack_seed() {
    local m=$MEMORY_URL/api/v1 k=$MEMORY_KEY e
    SEED_PRODUCT=seeded-product
    SEED_PRODUCT_ID="$(stack_call POST "$m/products" "$k" \
        '{"name":"seeded-product","description":"Seeded before the run","status":"active"}' |
        stack_json id)"
    stack_call POST "$m/memory/product/$SEED_PRODUCT/state" "$k" \
        '{"status":"beta","summary":"seeded"}' >/dev/null
    stack_call PUT "$m/memory/identity" "$k" \
        '{"identity":{"name":"Seed"},"products":["seeded-product"],"constraints":["be brief"]}' >/dev/null
    SEED_DECISION="$(stack_call POST "$m/memory/decisions" "$k" \
        '{"decision":"Use PostgreSQL","product_name":"seeded-product","reasoning":"It is there"}' |
        stack_json id)"
    SEED_FREE_FORM="$(stack_call POST "$m/memory/free-form" "$k" \
        '{"content":"The user prefers short answers","tags":["style"]}' | stack_json id)"
    stack_call POST "$m/ingest/events" "$k" \
        '{"event_type":"ai_cost","payload":{"product":"seeded-product","model":"seed-model","cost_usd":0.1,"input_tokens":10,"output_tokens":2}}' >/dev/null
    # A workspace whose synced context file was edited by hand: an open drift event.
    SEED_WORKSPACE="$(stack_call POST "$m/workspaces" "$k" '{"name":"seeded-workspace"}' | stack_json id)"
    stack_call POST "$m/workspaces/$SEED_WORKSPACE/sync" "$k" '{}' >/dev/null
    SEED_DRIFT="$(stack_call POST "$m/workspaces/$SEED_WORKSPACE/ingest" "$k" \
        '{"files":[{"path":"AGENTS.md","content":"edited by hand"}]}' |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["drift"][0]["id"])')"
    # A dataset of the product's name: the fuzzer gives every `{name}` path parameter the one
    # seeded name (see fuzz.sh), and the dataset reads answer it.
    SEED_DATASET=$SEED_PRODUCT
    stack_call POST "$m/ingest/datasets/$SEED_DATASET/rows" "$k" \
        '{"rows":[{"id":1,"visits":10,"page":"/"},{"id":2,"visits":3.5,"page":"/docs"}]}' >/dev/null
    # A pending connector proposal and lead, and a stored draft set of one mail thread.
    SEED_PROPOSAL="$(stack_call POST "$m/connectors/intake" "$k" \
        '{"raw_content":"Remember that the user prefers tea","ai_vendor":"claude","requested_capability":"memory.write"}' |
        stack_json proposal_id)"
    SEED_LEAD="$(stack_call POST "$m/connectors/intake" "$k" \
        '{"raw_content":"Jane from Acme wants a demo","requested_capability":"lead.capture"}' |
        stack_json lead_id)"
    # A model credential, and a run of each kind (they fail: the stack's model endpoint does not
    # answer).
    stack_call POST "$m/byok" "$k" \
        '{"service":"openai","label":"seeded","key":"sk-seeded-0123456789abcdef"}' >/dev/null
    SEED_BRIEF="$(stack_call POST "$m/content/brief" "$k" '{"topic":"Seeded brief"}' | stack_json id)"
    SEED_AUTONOMOUS_RUN="$(stack_call POST "$m/marketing/autonomous/run" "$k" \
        '{"goal":"Seeded goal"}' | stack_json id)"
    SEED_WATCH_RUN="$(stack_call POST "$m/marketing/competitor-watch/run" "$k" \
        '{"competitors":[{"name":"Seeded rival"}]}' | stack_json id)"
    # A stored competitor watch, and another to delete.
    SEED_WATCH="$(stack_call POST "$m/marketing/competitor-watches" "$k" \
        '{"name":"Seeded watch","interval_minutes":1440,"competitors":[{"name":"Seeded rival"}]}' |
        stack_json id)"
    SEED_SPARE_WATCH="$(stack_call POST "$m/marketing/competitor-watches" "$k" \
        '{"interval_minutes":60,"competitors":[{"name":"Spare rival"}]}' | stack_json id)"
    SEED_DRAFT_ACCOUNT=seed@example.com
    SEED_DRAFT_THREAD=18b83766f0bcbac0
    stack_call PUT "$m/inbox/drafts" "$k" \
        "{\"account\":{\"email\":\"$SEED_DRAFT_ACCOUNT\"},\"drafts\":[{\"thread_id\":\"$SEED_DRAFT_THREAD\",\"latest_message_id\":\"ab12\",\"latest_message_at\":\"2026-01-01T00:00:00Z\",\"generated_at\":\"2026-01-01T00:01:00Z\",\"why\":\"seeded\",\"drafts\":[{\"tone\":\"warm\",\"text\":\"Thanks!\"}]}]}" >/dev/null

    local a=$MAIL_URL/api/v1
    k=$MAIL_KEY
    SEED_SITE="$(stack_call POST "$a/sites" "$k" \
        '{"name":"Seed","slug":"seed","from_name":"Seed"}' | stack_json id)"
    SEED_CONTACT="$(stack_call POST "$a/identify" "$k" \
        "{\"email\":\"ada@example.com\",\"first_name\":\"Ada\",\"site_id\":\"$SEED_SITE\"}" |
        stack_json contact_id)"
    SEED_CAMPAIGN="$(stack_call POST "$a/campaigns" "$k" \
        "{\"name\":\"Welcome\",\"site_id\":\"$SEED_SITE\"}" | stack_json id)"
    # Two steps of it (one the step routes read and change, one they delete), and an active
    # campaign the seeded contact is enrolled in (its step a day away).
    SEED_STEP="$(stack_call POST "$a/campaigns/$SEED_CAMPAIGN/steps" "$k" \
        '{"subject":"Welcome","html":"<p>Welcome</p>"}' | stack_json id)"
    SEED_SPARE_STEP="$(stack_call POST "$a/campaigns/$SEED_CAMPAIGN/steps" "$k" \
        '{"subject":"Spare","html":"<p>Spare</p>"}' | stack_json id)"
    SEED_ENROLLING="$(stack_call POST "$a/campaigns" "$k" \
        "{\"name\":\"Enrolling\",\"site_id\":\"$SEED_SITE\",\"steps\":[{\"subject\":\"Later\",\"html\":\"<p>Later</p>\",\"delay_minutes\":1440}]}" |
        stack_json id)"
    stack_call POST "$a/campaigns/$SEED_ENROLLING/status" "$k" '{"status":"active"}' >/dev/null
    stack_call POST "$a/campaigns/$SEED_ENROLLING/enrollments" "$k" \
        "{\"contact_id\":\"$SEED_CONTACT\"}" >/dev/null
    stack_call POST "$a/templates" "$k" '{"name":"Welcome","brief":"Say hello"}' >/dev/null
    # A pending draft, and an approval waiting: an agent's key asked to make the seeded
    # campaign active (the default policy holds agents' launches back).
    SEED_DRAFT="$(stack_call POST "$a/drafts" "$k" \
        "{\"site_id\":\"$SEED_SITE\",\"subject\":\"Seed\",\"body_html\":\"<p>Seed</p>\"}" |
        stack_json id)"
    # A running A/B test of a draft campaign's first step.
    local tested
    tested="$(stack_call POST "$a/campaigns" "$k" \
        "{\"name\":\"Tested\",\"site_id\":\"$SEED_SITE\",\"steps\":[{\"subject\":\"Base\",\"html\":\"<p>Base</p>\"}]}" |
        stack_json id)"
    SEED_AB_TEST="$(stack_call POST "$a/ab-tests" "$k" \
        "{\"campaign_id\":\"$tested\",\"name\":\"Seed\",\"variants\":[{\"subject\":\"A\"},{\"subject\":\"B\"}]}" |
        stack_json id)"
    local agent
    agent="$(stack_call POST "$a/api-keys" "$k" \
        '{"name":"seed agent","scope":"write","agent":true}' | stack_json secret)"
    SEED_APPROVAL="$(stack_call POST "$a/campaigns/$SEED_CAMPAIGN/status" "$agent" \
        '{"status":"active"}' | stack_json approval_id)"
    stack_call POST "$a/suppressions" "$k" '{"email":"gone@example.com","note":"seeded"}' >/dev/null
    SEED_EMAIL="$(stack_call POST "$a/send" "$k" \
        "{\"to\":\"ada@example.com\",\"site_id\":\"$SEED_SITE\",\"subject\":\"Hello\",\"html\":\"<p>Hi <a href=\\\"https://example.com\\\">there</a></p>\"}" |
        stack_json id)"
    for _ in $(seq 1 100); do
        e="$(stack_call GET "$a/emails/$SEED_EMAIL" "$k" | stack_json status)"
        [[ $e == queued ]] || break
        sleep 0.1
    done
    [[ $e == sent ]] || die "the seeded email is $e, not sent (see $STACK_DIR/send-worker.log)"
    stack_tracking_tokens "$SEED_EMAIL"
    stack_call POST "$a/conversion" "$k" \
        '{"email":"ada@example.com","revenue":12.5,"currency":"EUR","order_id":"seed-1"}' >/dev/null
    # Two outbound-webhook subscriptions (one the delete takes), and a delivery of the first:
    # an unsubscribe's event (its endpoint never answers: it stays pending, then dead).
    SEED_WEBHOOK="$(stack_call POST "$a/webhook-subscriptions" "$k" \
        '{"url":"https://hooks.example.com/seed","events":["contact.unsubscribed"]}' | stack_json id)"
    SEED_SPARE_WEBHOOK="$(stack_call POST "$a/webhook-subscriptions" "$k" \
        '{"url":"https://hooks.example.com/spare","events":["email.bounced"]}' | stack_json id)"
    stack_call POST "$a/identify" "$k" \
        "{\"email\":\"leaving@example.com\",\"site_id\":\"$SEED_SITE\"}" >/dev/null
    stack_call POST "$a/contacts/unsubscribe" "$k" '{"email":"leaving@example.com"}' >/dev/null
    SEED_DELIVERY="$(stack_call GET "$a/webhook-deliveries?subscription_id=$SEED_WEBHOOK" "$k" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])')"
    # Two signup forms (one the delete takes), and the confirmation link of a signup of the
    # first.
    SEED_FORM="$(stack_call POST "$a/forms" "$k" \
        "{\"site_id\":\"$SEED_SITE\",\"name\":\"Seed\",\"fields\":[{\"name\":\"first_name\",\"label\":\"First name\"}]}" |
        stack_json id)"
    SEED_SPARE_FORM="$(stack_call POST "$a/forms" "$k" \
        "{\"site_id\":\"$SEED_SITE\",\"name\":\"Spare\"}" | stack_json id)"
    stack_form_confirmation "$SEED_FORM"
    # Two social posts (one the delete takes) and a social campaign (no platform is connected
    # in the stack: they stay drafts, and scheduling answers 422).
    SEED_SOCIAL_POST="$(stack_call POST "$a/social/posts" "$k" \
        '{"title":"Seed","content":"Seeded post","platforms":["mastodon","x"]}' | stack_json id)"
    SEED_SPARE_SOCIAL_POST="$(stack_call POST "$a/social/posts" "$k" \
        '{"title":"Spare","content":"Spare post","platforms":["x"]}' | stack_json id)"
    SEED_SOCIAL_CAMPAIGN="$(stack_call POST "$a/social/campaigns" "$k" \
        '{"name":"Seed","platform":"x","destination_url":"https://example.com/seed"}' | stack_json id)"
    # Two content blocks and a content source to delete (a public name that does not
    # resolve: stored, its reads fail).
    SEED_BLOCK="$(stack_call POST "$a/content/blocks" "$k" \
        '{"name":"seed_footer","html":"<p>Seed</p>"}' | stack_json id)"
    SEED_SPARE_BLOCK="$(stack_call POST "$a/content/blocks" "$k" \
        '{"name":"seed_spare","html":"<p>Spare</p>"}' | stack_json id)"
    SEED_SPARE_SOURCE="$(stack_call POST "$a/content/sources" "$k" \
        "{\"site_id\":\"$SEED_SITE\",\"url\":\"https://feeds.invalid/spare.xml\"}" | stack_json id)"
    # A Twilio account (sealed; nothing is sent to Twilio), so that Twilio's callbacks for the
    # project are checked for their signature (401) rather than answered 404.
    stack_call PUT "$a/sms/provider" "$k" \
        '{"provider":"twilio","account_sid":"AC00000000000000000000000000000000","auth_token":"seedseedseedseedseedseedseedseed","from_number":"+14158675309"}' >/dev/null
    # Commerce sources (a Stripe and a Shopify one, for their webhooks; a spare one the delete
    # takes) and a spare platform trigger the delete takes.
    SEED_STRIPE_SOURCE="$(stack_call POST "$a/platforms/commerce" "$k" \
        "{\"platform\":\"stripe\",\"signing_secret\":\"whsec_seed\",\"site_id\":\"$SEED_SITE\"}" | stack_json id)"
    SEED_SHOPIFY_SOURCE="$(stack_call POST "$a/platforms/commerce" "$k" \
        "{\"platform\":\"shopify\",\"signing_secret\":\"shpss_seed\",\"site_id\":\"$SEED_SITE\"}" | stack_json id)"
    SEED_SPARE_COMMERCE_SOURCE="$(stack_call POST "$a/platforms/commerce" "$k" \
        "{\"platform\":\"stripe\",\"signing_secret\":\"whsec_spare\",\"site_id\":\"$SEED_SITE\"}" | stack_json id)"
    SEED_SPARE_TRIGGER="$(stack_call POST "$a/platforms/triggers" "$k" \
        '{"platform":"stripe","event_type":"checkout.session.completed","action":"tag","tag":"buyer"}' |
        stack_json id)"
    # Two automations (one the delete takes), the first active.
    SEED_AUTOMATION="$(stack_call POST "$a/automations" "$k" \
        "{\"site_id\":\"$SEED_SITE\",\"name\":\"Seed flow\",\"trigger\":{\"type\":\"event\",\"event\":\"signed_up\"},\"steps\":[{\"type\":\"wait\",\"minutes\":60},{\"type\":\"add_tag\",\"tag\":\"flowed\"}]}" |
        stack_json id)"
    stack_call POST "$a/automations/$SEED_AUTOMATION/activate" "$k" '{}' >/dev/null
    SEED_SPARE_AUTOMATION="$(stack_call POST "$a/automations" "$k" \
        "{\"site_id\":\"$SEED_SITE\",\"name\":\"Spare flow\",\"trigger\":{\"type\":\"tag_added\",\"tag\":\"spare\"},\"steps\":[{\"type\":\"exit\"}]}" |
        stack_json id)"
    export SEED_PRODUCT SEED_PRODUCT_ID SEED_DECISION SEED_FREE_FORM SEED_DATASET SEED_PROPOSAL SEED_LEAD \
        SEED_DRAFT_ACCOUNT SEED_DRAFT_THREAD SEED_SITE SEED_CONTACT SEED_CAMPAIGN SEED_EMAIL \
        SEED_STEP SEED_SPARE_STEP SEED_ENROLLING SEED_DRAFT SEED_APPROVAL SEED_AB_TEST \
        SEED_WORKSPACE SEED_DRIFT SEED_WEBHOOK SEED_SPARE_WEBHOOK SEED_DELIVERY \
        SEED_OPEN_TOKEN SEED_CLICK_TOKEN SEED_UNSUBSCRIBE_TOKEN SEED_FORM SEED_SPARE_FORM \
        SEED_FORM_CONFIRMATION SEED_SOCIAL_POST SEED_SPARE_SOCIAL_POST SEED_SOCIAL_CAMPAIGN \
        SEED_BLOCK SEED_SPARE_BLOCK SEED_SPARE_SOURCE SEED_AUTOMATION SEED_SPARE_AUTOMATION \
        SEED_STRIPE_SOURCE SEED_SHOPIFY_SOURCE SEED_SPARE_COMMERCE_SOURCE SEED_SPARE_TRIGGER
    log "seeded: product $SEED_PRODUCT, decision $SEED_DECISION, site $SEED_SITE, contact $SEED_CONTACT, email $SEED_EMAIL (sent)"
}

# stack_tracking_tokens EMAIL_ID: the open and click tokens of the links in the email the send
# worker wrote to the outbox, and an unsubscribe token for it (a transactional email has no
# unsubscribe link, so it is signed here as mail-api signs it). Sets SEED_OPEN_TOKEN,
# SEED_CLICK_TOKEN and SEED_UNSUBSCRIBE_TOKEN.
stack_tracking_tokens() {
    local tokens
    tokens="$(python3 - "$STACK_DIR/outbox/$1.eml" "$1" <<'PY'
import base64, email, hashlib, hmac, os, re, sys, uuid

message = email.message_from_bytes(open(sys.argv[1], "rb").read())
text = "".join(
    part.get_payload(decode=True).decode("utf-8", "replace")
    for part in message.walk()
    if not part.is_multipart()
)
for kind in "oc":
    found = re.search(rf"/t/{kind}/([A-Za-z0-9_.-]+)", text)
    if found is None:
        sys.exit(f"no /t/{kind}/ link in {sys.argv[1]}")
    print(found.group(1))
payload = bytes([1]) + b"u" + uuid.UUID(sys.argv[2]).bytes
tag = hmac.new(os.environ["TRACKING_SECRET"].encode(), payload, hashlib.sha256).digest()
print(".".join(base64.urlsafe_b64encode(raw).decode().rstrip("=") for raw in (payload, tag)))
PY
)" || die "could not read the tracking links of the seeded email"
    {
        read -r SEED_OPEN_TOKEN
        read -r SEED_CLICK_TOKEN
        read -r SEED_UNSUBSCRIBE_TOKEN
    } <<<"$tokens"
}

# stack_form_confirmation FORM_ID: signs up signup@example.com on the form (the page's render
# time signed here as mail-api signs it, a minute back) and reads the confirmation token from
# the email the send worker wrote to the outbox. Sets SEED_FORM_CONFIRMATION.
stack_form_confirmation() {
    SEED_FORM_CONFIRMATION="$(python3 - "$MAIL_URL" "$1" "$STACK_DIR/outbox" <<'PY'
import base64, email, hashlib, hmac, os, pathlib, re, sys, time, urllib.parse, urllib.request

base, form, outbox = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
key = hmac.new(os.environ["TRACKING_SECRET"].encode(), b"mail-api signup forms v1", hashlib.sha256).digest()
millis = int(time.time() * 1000) - 60_000
tag = hmac.new(key, f"stamp {form}|{millis}".encode(), hashlib.sha256).digest()
stamp = f"{millis}.{base64.urlsafe_b64encode(tag).decode().rstrip('=')}"
body = urllib.parse.urlencode({"email": "signup@example.com", "first_name": "Sig", "rendered": stamp})
urllib.request.urlopen(urllib.request.Request(f"{base}/f/{form}", data=body.encode()), timeout=20)
for _ in range(600):
    for path in outbox.glob("*.eml"):
        message = email.message_from_bytes(path.read_bytes())
        text = "".join(
            part.get_payload(decode=True).decode("utf-8", "replace")
            for part in message.walk()
            if not part.is_multipart()
        )
        found = re.search(r"/f/confirm/([A-Za-z0-9_.-]+)", text)
        if found:
            print(found.group(1))
            sys.exit(0)
    time.sleep(0.1)
sys.exit("no confirmation email in the outbox within 60 s")
PY
)" || die "could not sign up on the seeded form"
}

stack_stop() {
    local rc=${1:-1} pid db
    for pid in "${STACK_PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${STACK_PIDS[@]}"; do
        for _ in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    STACK_PIDS=()
    for db in "${STACK_DBS[@]}"; do
        if [[ -n ${STACK_KEEP_DATABASES:-} ]]; then
            log "kept database $db"
        else
            stack_psql -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" || warn "could not drop $db"
        fi
    done
    STACK_DBS=()
    if [[ -n ${STACK_DIR:-} ]]; then
        if ((rc == 0)); then rm -rf "$STACK_DIR"; else log "logs kept in $STACK_DIR"; fi
    fi
}

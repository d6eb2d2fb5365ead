#!/usr/bin/env bash
# The README's quickstart, runnable (`make quickstart`, while `make dev` runs in another
# terminal): with the keys and the site `make dev` saved in .dev/keys.env, it sends a first
# email and shows the .eml file it became in the dev outbox, then records a decision in
# memory-api and finds it by meaning (semantic search). Each step prints its curl command and
# the answer; the script fails (exit 1) as soon as a step does not give what it should.
set -euo pipefail

usage() {
    echo "usage: scripts/quickstart.sh [-h]   (run make dev first; it reads .dev/keys.env)"
}
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
only_help_args "$@"

KEYS="$ROOT/.dev/keys.env"
[[ -f $KEYS ]] || die "no .dev/keys.env: start \`make dev\` (in another terminal) first"
# shellcheck disable=SC1090
. "$KEYS"
for var in MEMORY_URL MAIL_URL MEMORY_LIVE_KEY MAIL_KEY MAIL_SITE_ID MAIL_OUTBOX; do
    [[ -n ${!var:-} ]] || die "$var is missing from .dev/keys.env: run \`make dev\` again"
done
for url in "$MEMORY_URL" "$MAIL_URL"; do
    curl -sf -o /dev/null "$url/readyz" || die "$url does not answer: is \`make dev\` running?"
done

# pretty: the JSON on stdin, indented; with a field name, that field alone.
pretty() {
    python3 -c '
import json, sys
value = json.load(sys.stdin)
if len(sys.argv) > 1:
    for name in sys.argv[1].split("."):
        value = value[int(name) if isinstance(value, list) else name]
print(value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False))' "$@"
}

# call METHOD URL KEY [BODY]: prints the command, then the answer; ANSWER holds its body and
# STATUS its status.
call() {
    local method=$1 url=$2 key=$3 body=${4:-} out
    printf '\n$ curl -X %s %s \\\n    -H "Authorization: Bearer $%s"' "$method" "$url" "$5"
    [[ -n $body ]] && printf " \\\\\n    -H 'Content-Type: application/json' -d '%s'" "$body"
    printf '\n'
    out="$(mktemp)"
    STATUS="$(curl -sS -o "$out" -w '%{http_code}' -X "$method" -H "Authorization: Bearer $key" \
        ${body:+-H 'Content-Type: application/json' --data-binary "$body"} "$url")"
    ANSWER="$(cat "$out")"
    rm -f "$out"
    printf '%s\n' "$STATUS"
    pretty <<<"$ANSWER" || printf '%s\n' "$ANSWER"
}

expect_status() {
    local want
    for want in "$@"; do [[ $STATUS == "$want" ]] && return 0; done
    die "expected HTTP $*, got $STATUS"
}

step() { printf '\n== %s\n' "$*"; }

# 1. Mail: one transactional email, through the dev site, to the file provider.
step "1. Send a first email (mail-api, the dev site $MAIL_SITE_ID sends as ${MAIL_FROM:-its address})"
subject="Hello from the quickstart ($(date -u +%H:%M:%S))"
call POST "$MAIL_URL/api/v1/send" "$MAIL_KEY" \
    "{\"to\":\"you@example.com\",\"site_id\":\"$MAIL_SITE_ID\",\"subject\":\"$subject\",\"html\":\"<p>It works.</p>\"}" \
    MAIL_KEY
expect_status 200 202
email_id="$(pretty id <<<"$ANSWER")"

step "2. See where it landed: the dev outbox"
eml="$MAIL_OUTBOX/$email_id.eml"
for _ in $(seq 1 100); do
    [[ -s $eml ]] && break
    sleep 0.1
done
[[ -s $eml ]] || die "$eml did not appear within 10 s (is the send-worker running? see make dev's output)"
printf '%s\n' "$eml"
grep -E '^(From|To|Subject):' "$eml" | head -n 3
grep -q "^Subject: $subject" "$eml" || die "$eml is not the email just sent"

# 2. Memory: a product, a decision on it, and a search that shares no word with it.
step "3. Create a product to record decisions on (409: it is there from a previous run)"
call POST "$MEMORY_URL/api/v1/products" "$MEMORY_LIVE_KEY" \
    '{"name":"quickstart","description":"The product of the quickstart"}' MEMORY_LIVE_KEY
expect_status 201 409

decision="Every service keeps its data in PostgreSQL."
step "4. Record a decision"
call POST "$MEMORY_URL/api/v1/memory/decisions" "$MEMORY_LIVE_KEY" \
    "{\"product_name\":\"quickstart\",\"decision\":\"$decision\",\"reasoning\":\"One database to run, back up and watch.\"}" \
    MEMORY_LIVE_KEY
expect_status 201
[[ "$(pretty embedded <<<"$ANSWER")" == true ]] ||
    warn "the decision was not embedded now (no embedding model answered): search falls back to keywords"

step "5. Find it by meaning (no word in common with the decision)"
call GET "$MEMORY_URL/api/v1/memory/decisions/search?q=which%20database%20do%20we%20use&product=quickstart&limit=3" \
    "$MEMORY_LIVE_KEY" "" MEMORY_LIVE_KEY
expect_status 200
[[ "$(pretty search_mode <<<"$ANSWER")" == semantic ]] || die "the search was not semantic"
[[ "$(pretty decisions.0.decision <<<"$ANSWER")" == "$decision" ]] ||
    die "the best match is not the decision just recorded"

printf '\nDone: the email is %s; the decision is the best match for "which database do we use".\n' "${eml#"$ROOT"/}"
printf 'Next: open %s/docs and %s/docs in a browser (the API references).\n' "$MAIL_URL" "$MEMORY_URL"

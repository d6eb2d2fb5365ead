#!/usr/bin/env bash
# Benchmark harness (`make bench`). Run after `cargo build --release --workspace`.
#
# Brings up the servers (infra.sh) and tools (tools.sh), makes two scratch
# databases bench_memory and bench_mail, migrates them, bootstraps a tenant in
# each with the admin CLI, starts memory-api on 127.0.0.1:18080 and mail-api on
# 127.0.0.1:18081, seeds one product, one site and an identity kernel, then measures:
#   a  memory-api GET /healthz
#   b  mail-api   GET /healthz
#   c  memory-api GET /api/v1/products/bench-product   (auth + rate limit + one indexed read)
#   d  mail-api   GET /api/v1/sites?limit=1
#   e  pgbench on bench_memory running the SQL of route c
#   f  pgbench on bench_mail running the SQL of route d
#   g  memory-api GET /api/v1/memory/identity          (auth + rate limit + one row)
#   h  pgbench on bench_memory running the SQL of route g
#   i  memory-api GET /memory/decisions/search, keyword mode, 100,000 decisions
#   j  the same in semantic mode (local model; its 20 questions repeat, so after the warm-up
#      their vectors come from the query cache unless BENCH_QUERY_CACHE_ENTRIES=0), 10,000
#      decisions, on a second memory-api (127.0.0.1:18082, database bench_memory_semantic)
#   k  GET /memory/search on that second memory-api
#   l  POST /memory/decisions on it (throughput with the local embedding in the request)
#      Beside the background pass and l, embed's latency example prints what the model alone
#      embeds on this machine, the same way and on the same texts, and the bench prints each
#      one's ratio to it (goal: at least 0.7; raw/model-alone.txt)
#   r  memory-api GET /memory/export-mif (full) of 10,000 decisions and 10,000 corpus entries:
#      time and the process's peak RSS
#   s  POST /memory/import-mif (replace) of that document into an empty user: the same
#   m  mail-api POST /api/v1/identify, varying emails (about half inserts, half updates)
#   n  pgbench on bench_mail running the upsert transaction of route m
#   o  mail-api POST /api/v1/events, varying emails and events (one triggered campaign)
#   p  mail-api GET /api/v1/export?format=json of a project of BENCH_EXPORT_CONTACTS
#      (1,000,000) contacts, streamed with curl to /dev/null: time and the process's peak RSS
#   q  the same with format=csv (a ZIP of CSV files)
#   t  mail-api POST /api/v1/send through a send-worker into the Resend stub (provider-stub):
#      (tp, up: t and u again with a personalized template and `data`, rendered per recipient)
#      the route answers once the provider has (status sent), so its latency is the pipeline's
#   u  the pipeline's throughput during t: emails accepted by the API, divided by the time
#      from t's start until the provider's acceptance of the last one was recorded; and what
#      one email cost over that window (raw/u-costs.txt, key=value, scripts/bench/costs.py):
#      CPU ms of mail-api, the send-worker, the stub, PostgreSQL (the postmaster and all its
#      processes) and RabbitMQ (beam.smp), WAL bytes, bench_mail's transactions and rows
#      inserted, updated and deleted, the broker's messages, and with pg_stat_statements
#      loaded (scripts/infra.sh configures it) the statements by total time
#   ur pgbench running the pipeline's own statements for one email per transaction (the API's
#      write, the worker's claim and outcome, the outbox delete:
#      scripts/bench/send-pipeline.pgbench) with as many clients as t has connections: the
#      reference u is set against (goal: u at least 0.6 of it), and its costs
#      (raw/ur-costs.txt, the same keys)
#   x  a campaign of one step launched to BENCH_CAMPAIGN_CONTACTS (100,000) contacts through
#      the same send-worker and stub: emails per second from the first provider acceptance to
#      the last, and its ratio to u (target: at least 0.9)
#   xa an automation's BENCH_CAMPAIGN_CONTACTS contacts waiting on a step, advanced to its send
#      step: emails per second as x, and its ratio to x (target: at least 0.9)
#   y  BENCH_WEBHOOK_EVENTS (10,000) outbound-webhook events written at once, delivered signed
#      by the send-worker to a local receiver: events per second, write to last delivery
#   bd BENCH_DSNS (10,000) delivery status notifications for x's emails, over SMTP to the
#      send-worker's bounce receiver: DSNs per second until the last is applied (goal: 500),
#      and what one DSN cost (raw/bd-costs.txt, the keys of u's)
#   v  memory-api POST /api/v1/signals/ingest, 50 producer signals per request (bodies made
#      by wrk-report.lua, every dedup_key new): requests and signals per second, p99
#   w  pgbench on bench_memory running the route's transaction (the same multi-row
#      INSERT ... ON CONFLICT of 50 signals, its arrays built by generate_series)
#   z  retrieval quality on the hard set (tests/fixtures/retrieval-hard, scripts/bench/retrieval.sh):
#      recall@1, recall@5, MRR and p95 latency of /memory/decisions/search and /memory/search
#      per provider/model (keyword only, each local model of scripts/models.sh), beside plain
#      cosine of the same model; written to results.json under "retrieval"
#   pdf  a producible pdf of BENCH_RENDER_PAGES (50) pages through memory-api and the
#      render-worker: seconds from the POST to the downloadable file, and the worker's peak RSS
#   video  a marketing video of BENCH_VIDEO_SECONDS (15) at 1080x1920 through the same worker
#          (video-silent: the same without narration, and the time ratio of the two):
#      seconds from the POST to the downloadable MP4, the worker's and ffmpeg's peak RSS
#   mg a platform migration of a Mailchimp-shaped account of BENCH_MIGRATION_CONTACTS (100,000)
#      contacts (scripts/bench/mailchimp-account.py) through the API and the send-worker that
#      runs the job: contacts per second (target: 2,000), mail-api's and the worker's peak RSS
#      (target: under 200 MB each)
# and prints req/s and p50/p95/p99 latency for each, plus the ratios c/e, d/f, g/h, m/n and v/w
# (for v and w also signals per second: 50 signals per request),
# also written to ${BENCH_OUT:-target/bench}/results.json. Any non-2xx response
# (or socket error, or failed transaction) fails the run. All traffic goes to
# 127.0.0.1 only; every load run is bounded by BENCH_DURATION. The services are
# stopped on exit; the two bench databases are left for inspection (and dropped
# at the start of the next run).
set -euo pipefail

usage() {
    cat <<'EOF'
usage: scripts/bench.sh [-h]
  Benchmark memory-api and mail-api (release binaries in ${CARGO_TARGET_DIR:-target}/release)
  against pgbench running the same SQL. Environment:
    BENCH_DURATION=10      seconds per scenario
    BENCH_CONNECTIONS=32   concurrent connections (wrk and pgbench; 2 threads each)
    BENCH_WARMUP=2         seconds of unmeasured load before each scenario (0: none)
    BENCH_SEARCH_CONNECTIONS=2      connections of the search scenarios i, j, k
    BENCH_KEYWORD_DECISIONS=100000  decisions of the keyword scenario i
    BENCH_SEMANTIC_DECISIONS=10000  decisions of the semantic scenarios j, k
    BENCH_MIF_ITEMS=10000           decisions and corpus entries of the MIF scenarios r, s
    BENCH_EXPORT_CONTACTS=1000000   contacts of the export scenarios p, q
    BENCH_SEND_CONNECTIONS=64       connections of the send scenario t (and clients of ur)
    BENCH_PG_STATEMENTS=1           pg_stat_statements tracks the send scenarios' statements
                                    when the server loads it (0: not tracked, no overhead)
    BENCH_ONLY=reads       only the cheap reads against pgbench (a-h)
    BENCH_ONLY=mail        only the mail scenarios (b, d, f, m-q, t, u, ur, mg): memory-api is not started
    BENCH_ONLY=migration   only the platform migration (mg): mail-api and a send-worker
    BENCH_MIGRATION_CONTACTS=100000 contacts of the migrated account of scenario mg
    BENCH_ONLY=send        only the send pipeline, its reference, the campaign, the webhooks and the
                           bounces (t, u, ur, tp, up, x, xa, y, bd)
    BENCH_CAMPAIGN_CONTACTS=100000  contacts of the campaign scenario x
    BENCH_WEBHOOK_EVENTS=10000      events of the outbound-webhook scenario y
    BENCH_DSNS=10000                DSNs of the bounce scenario bd (at most x's emails)
    BENCH_ONLY=signals     only the producer-signal scenarios (v, w); mail-api still starts
    BENCH_ONLY=render      only the render scenarios (pdf, video); mail-api still starts
    BENCH_SIGNAL_CONNECTIONS=32     connections of the signal scenarios v, w
    BENCH_ONLY=retrieval   only the retrieval-quality table (z)
    BENCH_ONLY=keyword     only the keyword search scenario (i); mail-api still starts
    BENCH_ONLY=search      only the local-model scenarios (background pass, j, k, l); mail-api
                           still starts
    BENCH_QUERY_CACHE_ENTRIES=4096  query vectors the semantic memory-api of j, k, l keeps
                                    (0: every query embedded per request; unset: its default)
    BENCH_EMBED_RUNTIME=onnx        the local model's runtime in j, k, l and the background pass
                                    (onnx: ONNX Runtime, scripts/models.sh --onnxruntime; candle)
    BENCH_EMBED_MODEL=all-mpnet-base-v2  the local model of j, k, l and the background pass (the
                                    services' default; all-MiniLM-L6-v2: the small one)
    BENCH_EMBED_QUANTIZED=1         int8 weights (onnx only; the shipped default); 0: full precision
    BENCH_RETRIEVAL_EXTRA='label|MEMORY_SEARCH__RRF_K=10;…'  more configurations for z
    BENCH_RENDER_PAGES=50           pages of the rendered pdf of scenario pdf
    BENCH_VIDEO_SECONDS=15          seconds of the rendered video of scenario video
    BENCH_OUT=target/bench results.json, raw outputs and service logs (relative: to the repo root)
    BENCH_RATE_LIMIT_BACKEND=inprocess|redis   sets *_RATE_LIMIT__BACKEND (unset: service default)
    RUST_LOG=warn          log filter for the services during the run
EOF
}
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
only_help_args "$@"
cd "$ROOT"

export BENCH_DURATION="${BENCH_DURATION:-10}"
export BENCH_CONNECTIONS="${BENCH_CONNECTIONS:-32}"
export BENCH_WARMUP="${BENCH_WARMUP:-2}"
export BENCH_THREADS=2
export BENCH_RATE_LIMIT_BACKEND="${BENCH_RATE_LIMIT_BACKEND:-}"
BENCH_ONLY="${BENCH_ONLY:-}"
EXPORT_CONTACTS="${BENCH_EXPORT_CONTACTS:-1000000}"
OUT="${BENCH_OUT:-target/bench}"
BIN="${CARGO_TARGET_DIR:-target}/release"

[[ $BENCH_DURATION =~ ^[1-9][0-9]*$ ]] || die "BENCH_DURATION must be a positive number of seconds"
[[ $BENCH_CONNECTIONS =~ ^[1-9][0-9]*$ ]] || die "BENCH_CONNECTIONS must be a positive integer"
((BENCH_CONNECTIONS >= BENCH_THREADS)) || die "BENCH_CONNECTIONS must be at least $BENCH_THREADS"
[[ $BENCH_WARMUP =~ ^[0-9]+$ ]] || die "BENCH_WARMUP must be a number of seconds"
case "$BENCH_RATE_LIMIT_BACKEND" in "" | inprocess | redis) ;; *) die "BENCH_RATE_LIMIT_BACKEND must be inprocess or redis" ;; esac
case "$BENCH_ONLY" in "" | reads | mail | send | signals | render | retrieval | search | migration | keyword) ;; *) die "BENCH_ONLY must be reads, mail, send, signals, render, retrieval, search, migration or keyword (or unset)" ;; esac
[[ -z ${BENCH_QUERY_CACHE_ENTRIES:-} || $BENCH_QUERY_CACHE_ENTRIES =~ ^[0-9]+$ ]] ||
    die "BENCH_QUERY_CACHE_ENTRIES must be a number of entries"
[[ $EXPORT_CONTACTS =~ ^[1-9][0-9]*$ ]] || die "BENCH_EXPORT_CONTACTS must be a positive integer"
MIGRATION_CONTACTS="${BENCH_MIGRATION_CONTACTS:-100000}"
[[ $MIGRATION_CONTACTS =~ ^[1-9][0-9]*$ ]] || die "BENCH_MIGRATION_CONTACTS must be a positive integer"
if [[ $BENCH_ONLY == retrieval ]]; then
    bash "$ROOT/scripts/infra.sh"
    mkdir -p "$OUT"
    rm -f "$OUT/results.json"
    bash "$ROOT/scripts/bench/retrieval.sh" "$BIN" "$OUT"
    python3 "$ROOT/scripts/bench/retrieval_eval.py" table "$OUT/retrieval.jsonl" "$OUT/results.json" >/dev/null
    log "results: $OUT/results.json"
    exit 0
fi
# memory: whether memory-api runs (not with BENCH_ONLY=mail or send);
# memory_scenarios: whether the memory scenarios other than the signals' run;
# mail_scenarios: whether the mail scenarios other than the send pipeline run;
# send_scenarios: whether the send pipeline runs; signal_scenarios: whether v and w run;
# read_scenarios: whether the cheap reads (a-h) run;
# render_scenarios: whether the pdf and video renders run; search_scenarios: whether the
# semantic search scenarios j and k run; migration_scenarios: whether the platform migration
# (mg) runs; keyword_scenario: whether the keyword search i runs.
memory() { [[ -z $BENCH_ONLY || $BENCH_ONLY == reads || $BENCH_ONLY == signals || $BENCH_ONLY == render || $BENCH_ONLY == search || $BENCH_ONLY == keyword ]]; }
keyword_scenario() { [[ -z $BENCH_ONLY || $BENCH_ONLY == keyword ]]; }
memory_scenarios() { [[ -z $BENCH_ONLY ]]; }
search_scenarios() { [[ -z $BENCH_ONLY || $BENCH_ONLY == search ]]; }
mail_scenarios() { [[ -z $BENCH_ONLY || $BENCH_ONLY == mail ]]; }
send_scenarios() { [[ $BENCH_ONLY != reads && $BENCH_ONLY != signals && $BENCH_ONLY != render && $BENCH_ONLY != search && $BENCH_ONLY != migration && $BENCH_ONLY != keyword ]]; }
migration_scenarios() { [[ -z $BENCH_ONLY || $BENCH_ONLY == mail || $BENCH_ONLY == migration ]]; }
read_scenarios() { [[ -z $BENCH_ONLY || $BENCH_ONLY == reads || $BENCH_ONLY == mail ]]; }
render_scenarios() { [[ -z $BENCH_ONLY || $BENCH_ONLY == render ]]; }
signal_scenarios() { [[ -z $BENCH_ONLY || $BENCH_ONLY == signals ]]; }
BINARIES=(mail-api admin)
! send_scenarios || BINARIES+=(send-worker provider-stub)
! migration_scenarios || send_scenarios || BINARIES+=(send-worker)
! memory || BINARIES+=(memory-api)
! render_scenarios || BINARIES+=(render-worker)

for b in "${BINARIES[@]}"; do
    [[ -x $BIN/$b ]] || die "no $BIN/$b: run 'make bench' (it builds the release binaries)"
done

MEMORY_ADDR=127.0.0.1:18080
MAIL_ADDR=127.0.0.1:18081
MEMORY_URL="http://$MEMORY_ADDR"
MAIL_URL="http://$MAIL_ADDR"
PG_BASE=postgres://postgres@127.0.0.1:5432
MEMORY_DB_URL="$PG_BASE/bench_memory"
MAIL_DB_URL="$PG_BASE/bench_mail"
LUA="$ROOT/scripts/bench/wrk-report.lua"

bash "$ROOT/scripts/infra.sh"
bash "$ROOT/scripts/tools.sh"

mkdir -p "$OUT/logs" "$OUT/raw"
rm -f "$OUT"/raw/* "$OUT/results.json"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/memmail-bench.XXXXXX")"
SCENARIOS="$WORK/scenarios.tsv"
: >"$SCENARIOS"

PIDS=()
# await_exit PID: waits up to 10 s for a process sent SIGTERM, then kills it.
await_exit() {
    local pid=$1
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        warn "pid $pid did not stop within 10 s of SIGTERM; killing it"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}
# stop_service PID...: stops services whose scenarios are over, so that their database pools
# do not hold connections a later scenario's pgbench needs (max_connections).
stop_service() {
    local pid kept=() p
    for pid in "$@"; do
        [[ -n $pid ]] || continue
        kill -TERM "$pid" 2>/dev/null || true
        await_exit "$pid"
    done
    for p in "${PIDS[@]}"; do
        [[ " $* " == *" $p "* ]] || kept+=("$p")
    done
    PIDS=("${kept[@]}")
}
cleanup() {
    local rc=$? pid
    for pid in "${PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        await_exit "$pid"
    done
    ((${#PIDS[@]} == 0)) || log "bench: services stopped"
    # A scenario failed: still print the summary of those that ran before it.
    if ((rc != 0)) && [[ -z ${REPORTED:-} && -s ${SCENARIOS:-} ]]; then
        warn "bench: stopped early; the scenarios that ran:"
        python3 "$ROOT/scripts/bench/report.py" "$SCENARIOS" "$OUT/results.json" || true
    fi
    if [[ ${PGSS_TRACK_WAS:-} == none ]]; then
        psql_pg -d postgres -c "ALTER SYSTEM RESET pg_stat_statements.track" -c "SELECT pg_reload_conf()" >/dev/null ||
            warn "could not restore the server's pg_stat_statements.track"
    fi
    if [[ ${AUTOVACUUM_WAS:-on} != on ]]; then
        psql_pg -d postgres -c "ALTER SYSTEM RESET autovacuum" -c "SELECT pg_reload_conf()" >/dev/null ||
            warn "could not restore the server's autovacuum setting"
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# psql itself, not Debian's wrapper of the same name (a Perl program that picks a cluster and
# then runs it): the bench asks the database five times a second while a pipeline drains, and
# a call through the wrapper cost about 30 ms more CPU, 7% of a 2-core machine taken from
# what is being measured.
PSQL=psql
for candidate in /usr/lib/postgresql/*/bin/psql; do
    [[ -x $candidate ]] && PSQL=$candidate
done
psql_pg() {
    env -u PGPASSWORD PGPASSFILE=/dev/null/none PGOPTIONS='-c client_min_messages=warning' \
        "$PSQL" -X -w -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p 5432 -U postgres "$@"
}

# PostgreSQL as production runs it. A server set up for CI may have autovacuum off; then
# every dead row of a 100,000-email campaign stays in the send outbox and email_log (seen:
# the outbox at 2,000 live rows and 107,000 dead ones, the campaign at 75 emails/s). The run
# turns it on (ALTER SYSTEM) and the cleanup restores the server's own setting.
AUTOVACUUM_WAS="$(psql_pg -d postgres -c 'SHOW autovacuum')"
if [[ $AUTOVACUUM_WAS != on ]]; then
    psql_pg -d postgres -c "ALTER SYSTEM SET autovacuum = on" -c "SELECT pg_reload_conf()" >/dev/null
    log "bench: autovacuum turned on for the run (the server had it $AUTOVACUUM_WAS)"
fi

# json_get KEY: the value of KEY in the JSON object on stdin (the whole input,
# or else its last line that is a JSON object).
json_get() {
    python3 -c '
import json, sys
text = sys.stdin.read()
try:
    obj = json.loads(text)
except ValueError:
    lines = [l for l in text.splitlines() if l.lstrip().startswith("{")]
    if not lines:
        sys.exit("no JSON object in: %s" % text[:500])
    obj = json.loads(lines[-1])
v = obj.get(sys.argv[1]) if isinstance(obj, dict) else None
if v in (None, ""):
    sys.exit("no %r in: %s" % (sys.argv[1], json.dumps(obj)[:500]))
print(v)' "$1"
}

# admin LOGNAME ARGS...: run the admin CLI, keep its output in the logs, print its stdout.
admin() {
    local name=$1
    shift
    "$BIN/admin" "$@" >"$OUT/logs/admin-$name.out" 2>"$OUT/logs/admin-$name.err" || {
        cat "$OUT/logs/admin-$name.err" >&2
        die "admin $* failed"
    }
    cat "$OUT/logs/admin-$name.out"
}

# ------------------------------------------------------------ databases, migrations
DATABASES=(bench_mail)
! memory || DATABASES+=(bench_memory)
for db in "${DATABASES[@]}"; do
    psql_pg -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db OWNER postgres" ||
        die "could not recreate database $db"
done
if memory; then
    MEMORY_DATABASE__URL="$MEMORY_DB_URL" "$BIN/memory-api" migrate >"$OUT/logs/memory-migrate.log" 2>&1 ||
        { tail -n 30 "$OUT/logs/memory-migrate.log" >&2; die "memory-api migrate failed"; }
fi
MAIL_DATABASE__URL="$MAIL_DB_URL" "$BIN/mail-api" migrate >"$OUT/logs/mail-migrate.log" 2>&1 ||
    { tail -n 30 "$OUT/logs/mail-migrate.log" >&2; die "mail-api migrate failed"; }
log "bench: databases ${DATABASES[*]} recreated and migrated"

# ------------------------------------------------------------------------ tenants
if memory; then
    USER_ID="$(admin create-user --memory-db "$MEMORY_DB_URL" memory create-user \
        --email bench@example.com --tier team | json_get user_id)"
    MEMORY_KEY_JSON="$(admin memory-create-key --memory-db "$MEMORY_DB_URL" memory create-key \
        --user "$USER_ID" --env live --scopes read,write --name bench)"
    MEMORY_KEY="$(json_get key <<<"$MEMORY_KEY_JSON")"
    MEMORY_KEY_ID="$(json_get key_id <<<"$MEMORY_KEY_JSON")"
fi
ACCOUNT_ID="$(admin create-account --mail-db "$MAIL_DB_URL" mail create-account --name bench |
    json_get account_id)"
PROJECT_ID="$(admin create-project --mail-db "$MAIL_DB_URL" mail create-project \
    --account "$ACCOUNT_ID" --name bench --plan enterprise | json_get project_id)"
MAIL_KEY="$(admin mail-create-key --mail-db "$MAIL_DB_URL" mail create-key \
    --project "$PROJECT_ID" --scope admin --name bench | json_get key)"
log "bench: memory user ${USER_ID:-(skipped)} (team), mail project $PROJECT_ID (enterprise), one API key each"

# ----------------------------------------------------------------------- services
ADDRS=("$MAIL_ADDR")
! memory || ADDRS+=("$MEMORY_ADDR")
for addr in "${ADDRS[@]}"; do
    ! tcp_open "${addr%:*}" "${addr##*:}" ||
        die "$addr is already in use (a bench still running?)"
done

# Rate limiting stays on (it is part of what is measured) but every quota is
# multiplied by 1e6, so the limiter runs and never refuses.
export RUST_LOG="${RUST_LOG:-warn}"
# The allocator's settings as the image sets them (deploy/docker/Dockerfile).
export MIMALLOC_ALLOW_THP="${MIMALLOC_ALLOW_THP:-0}" MIMALLOC_PURGE_DELAY="${MIMALLOC_PURGE_DELAY:-0}"
svc_env=(MEMORY_RATE_LIMIT__SCALE=1000000 MAIL_RATE_LIMIT__SCALE=1000000
    MEMORY_SECRETS__KEK="$(head -c 32 /dev/urandom | base64)"
    MAIL_SECRETS__KEK="$(head -c 32 /dev/urandom | base64)"
    MAIL_TRACKING__SECRET="$(head -c 32 /dev/urandom | base64)"
    MAIL_TRACKING__BASE_URL="http://$MAIL_ADDR"
    # Rendered files (scenario pdf): memory-api and render-worker share the store.
    MEMORY_OBJECTS__DIR="$WORK/objects"
    # Scenario y's webhook receiver and scenario mg's Mailchimp account are on loopback.
    MAIL_OUTBOUND_WEBHOOKS__ALLOW_PRIVATE_TARGETS=true)
MAILCHIMP_ADDR=127.0.0.1:18091
! migration_scenarios || svc_env+=(MAIL_PLATFORMS__MAILCHIMP_BASE_URL="http://$MAILCHIMP_ADDR")
if [[ -n $BENCH_RATE_LIMIT_BACKEND ]]; then
    svc_env+=(MEMORY_RATE_LIMIT__BACKEND="$BENCH_RATE_LIMIT_BACKEND"
        MAIL_RATE_LIMIT__BACKEND="$BENCH_RATE_LIMIT_BACKEND")
fi

if memory; then
    env "${svc_env[@]}" MEMORY_DATABASE__URL="$MEMORY_DB_URL" MEMORY_HTTP__BIND="$MEMORY_ADDR" \
        "$BIN/memory-api" serve >"$OUT/logs/memory-api.log" 2>&1 </dev/null &
    PIDS+=($!)
    MEMORY_PID=$!
fi
env "${svc_env[@]}" MAIL_DATABASE__URL="$MAIL_DB_URL" MAIL_HTTP__BIND="$MAIL_ADDR" \
    "$BIN/mail-api" serve >"$OUT/logs/mail-api.log" 2>&1 </dev/null &
PIDS+=($!)
MAIL_PID=$!

# wait_healthy NAME PID URL: until URL/healthz answers 2xx (60 s at most).
wait_healthy() {
    local name=$1 pid=$2 url=$3
    for _ in $(seq 1 120); do
        curl -fsS -o /dev/null --max-time 2 "$url/healthz" 2>/dev/null && return 0
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 30 "$OUT/logs/$name.log" >&2
            die "$name exited before answering /healthz (log: $OUT/logs/$name.log)"
        fi
        sleep 0.5
    done
    tail -n 30 "$OUT/logs/$name.log" >&2
    die "$name did not answer $url/healthz within 60 s"
}
! memory || wait_healthy memory-api "$MEMORY_PID" "$MEMORY_URL"
wait_healthy mail-api "$MAIL_PID" "$MAIL_URL"
memory_where="(not started)"
! memory || memory_where="$MEMORY_ADDR"
log "bench: memory-api on $memory_where, mail-api on $MAIL_ADDR (rate limit scale 1e6, backend ${BENCH_RATE_LIMIT_BACKEND:-service default})"

# ---------------------------------------------------------------------------- seed
# post_created URL KEY BODY: POST the JSON body, require 201, print the `id`.
post_created() {
    local url=$1 key=$2 body=$3 code
    code="$(curl -sS -o "$WORK/resp" -w '%{http_code}' --max-time 10 -X POST \
        -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
        --data "$body" "$url")" || die "POST $url failed"
    [[ $code == 201 ]] || die "POST $url answered $code, not 201: $(head -c 500 "$WORK/resp")"
    json_get id <"$WORK/resp"
}
SITE_ID="$(post_created "$MAIL_URL/api/v1/sites" "$MAIL_KEY" \
    '{"name":"Bench","slug":"bench","from_name":"Bench"}')"
if memory; then
    PRODUCT_ID="$(post_created "$MEMORY_URL/api/v1/products" "$MEMORY_KEY" \
        '{"name":"bench-product","description":"bench","status":"active"}')"
    code="$(curl -sS -o "$WORK/resp" -w '%{http_code}' --max-time 10 -X PUT \
        -H "Authorization: Bearer $MEMORY_KEY" -H 'Content-Type: application/json' \
        --data '{"identity":{"name":"Bench","role":"benchmark"},"products":["bench-product"],"constraints":["Be quick"],"model_preferences":{"default":"small"}}' \
        "$MEMORY_URL/api/v1/memory/identity")" || die "PUT identity failed"
    [[ $code == 200 ]] || die "PUT identity answered $code: $(head -c 500 "$WORK/resp")"
    log "bench: seeded product $PRODUCT_ID, site $SITE_ID and an identity kernel"
fi

# The routes' SQL, for pgbench (literal uuids: pgbench's \set has no uuid type).
# The trailing \set is no work; it makes pgbench read the clock again at the end
# of each transaction. Without it pgbench reuses the timestamp taken before it
# sent the query whenever the answer is already there when it looks, and logs
# a latency of 0 for about half of all transactions at these speeds.
if memory; then
    PRODUCT_USER="$(psql_pg -d bench_memory -c 'SELECT user_id FROM products LIMIT 1')"
    [[ -n $PRODUCT_USER ]] || die "bench_memory.products has no row after seeding"
    cat >"$WORK/memory.sql" <<EOF
SELECT id, name, description, status, created_at, updated_at FROM products WHERE user_id = '$PRODUCT_USER' AND environment = 'live' AND name = 'bench-product';
\\set bench_clock 0
EOF
    cat >"$WORK/identity.sql" <<EOF
SELECT kernel, injection_block, token_count, version, updated_at FROM identity_kernels WHERE user_id = '$PRODUCT_USER' AND environment = 'live';
\\set bench_clock 0
EOF
fi
cat >"$WORK/mail.sql" <<EOF
SELECT id, name, slug, from_name, created_at FROM sites WHERE project_id = '$PROJECT_ID' ORDER BY id LIMIT 2;
\\set bench_clock 0
EOF
# Both must run and find the seeded row, or the comparison means nothing.
rows="$(head -n 1 "$WORK/mail.sql" | psql_pg -d bench_mail 2>&1)" ||
    die "the sites route's SQL no longer matches the schema; update scripts/bench.sh: $rows"
[[ -n $rows ]] || die "the sites route's SQL finds no row in bench_mail (project_id $PROJECT_ID)"
if memory; then
    rows="$(head -n 1 "$WORK/memory.sql" | psql_pg -d bench_memory 2>&1)" ||
        die "the product route's SQL no longer matches the schema; update scripts/bench.sh: $rows"
    [[ -n $rows ]] || die "the product route's SQL finds no row in bench_memory (user_id $PRODUCT_USER)"
    rows="$(head -n 1 "$WORK/identity.sql" | psql_pg -d bench_memory 2>&1)" ||
        die "the identity route's SQL no longer matches the schema; update scripts/bench.sh: $rows"
    [[ -n $rows ]] || die "the identity route's SQL finds no row in bench_memory"
fi

# ------------------------------------------------------------------ per-email costs
# costs_begin ID, costs_end ID, costs_write ID EMAILS NAME: what one email (or pgbench
# transaction) of scenario ID cost over its measured window, from a snapshot at each end
# (scripts/bench/costs.py), into raw/ID-costs.txt: the CPU time of each process of COST_PROCS
# (NAME=PID, with its descendants: the postmaster's are PostgreSQL's backends and background
# processes) and of the whole machine, the server's WAL (position, records, full-page
# images), bench_mail's transactions and rows (pg_stat_database), RabbitMQ's message counters,
# and with PG_STATEMENTS=1 bench_mail's statements (pg_stat_statements, reset at the start;
# all of them in raw/ID-statements.tsv). The server, the broker and the machine are shared
# with whatever else runs: measure on a quiet machine. A backend publishes its counters up to
# 10 s after its last transaction (PostgreSQL's PGSTAT_IDLE_INTERVAL): the counters are read
# STATS_SETTLE seconds after the window's end, and the window starts that long after the work
# before it, and just after a CHECKPOINT.
STATS_SETTLE=11
COST_PROCS=()
PG_STATEMENTS=0
# RabbitMQ's global counters (rabbit_global_counters, 3.9 and later) of AMQP 0-9-1, every queue
# type: messages published to the broker, routed to queues, delivered to consumers, acked.
AMQP_COUNTERS='C = rabbit_global_counters:overview(),
S = fun(K) -> maps:fold(fun(L, M, A) -> case lists:member({protocol, amqp091}, L) of
    true -> A + maps:get(K, M, 0); false -> A end end, 0, C) end,
io:format("~b ~b ~b ~b~n", [S(messages_received_total), S(messages_routed_total),
    S(messages_delivered_total), S(messages_acknowledged_total)]).'
costs_cpu() {
    python3 "$ROOT/scripts/bench/costs.py" snapshot "${COST_PROCS[@]}"
    echo "wal.lsn_bytes=$(psql_pg -d postgres -c "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint")"
}
costs_counters() {
    local x i u d r f line
    read -r x i u d < <(psql_pg -d postgres -F ' ' -c "SELECT xact_commit + xact_rollback,
        tup_inserted, tup_updated, tup_deleted FROM pg_stat_database WHERE datname = 'bench_mail'")
    printf 'db.xacts=%s\ndb.inserted=%s\ndb.updated=%s\ndb.deleted=%s\n' "$x" "$i" "$u" "$d"
    # Autovacuum's runs in the window: its CPU counts in PostgreSQL's, whichever scenario left
    # the dead rows it removes.
    read -r x i < <(psql_pg -d bench_mail -F ' ' -c "SELECT coalesce(sum(autovacuum_count), 0),
        coalesce(sum(autoanalyze_count), 0) FROM pg_stat_user_tables")
    printf 'db.autovacuums=%s\ndb.autoanalyzes=%s\n' "$x" "$i"
    # Checkpoints in the window: after one, the first change of each page writes the whole
    # page to the WAL again (full-page images), which moves a window's cost by itself.
    printf 'db.checkpoints=%s\n' "$(psql_pg -d postgres -c "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter")"
    if line="$(psql_pg -d postgres -F ' ' -c "SELECT wal_records, wal_fpi FROM pg_stat_wal" 2>/dev/null)"; then
        read -r r f <<<"$line"
        printf 'wal.records=%s\nwal.fpi=%s\n' "$r" "$f"
    fi
    if line="$(as_root timeout 60 rabbitmqctl -q eval "$AMQP_COUNTERS" 2>/dev/null | head -n 1)" &&
        [[ $line =~ ^[0-9]+\ [0-9]+\ [0-9]+\ [0-9]+$ ]]; then
        read -r x i u d <<<"$line"
        printf 'amqp.received=%s\namqp.routed=%s\namqp.delivered=%s\namqp.acked=%s\n' "$x" "$i" "$u" "$d"
    fi
}
costs_begin() {
    # Every window starts just after a checkpoint, so that windows compared with each other
    # (u and up) pay the same full-page images, wherever the server's own checkpoints fall.
    psql_pg -d postgres -c "CHECKPOINT" >/dev/null
    sleep "$STATS_SETTLE"
    ((PG_STATEMENTS == 0)) || psql_pg -d bench_mail -c "SELECT pg_stat_statements_reset()" >/dev/null
    costs_counters >"$WORK/costs-$1.before"
    costs_cpu >>"$WORK/costs-$1.before"
}
costs_end() {
    costs_cpu >"$WORK/costs-$1.after"
    sleep "$STATS_SETTLE"
    costs_counters >>"$WORK/costs-$1.after"
    ((PG_STATEMENTS == 0)) || {
        printf 'calls\ttotal_ms\trows\twal_bytes\tquery\n'
        psql_pg -d bench_mail -F $'\t' -c "SELECT s.calls, round(s.total_exec_time::numeric, 3), s.rows,
                s.wal_bytes, left(regexp_replace(s.query, '\s+', ' ', 'g'), 8000)
            FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
            WHERE d.datname = 'bench_mail' AND s.query NOT LIKE '%pg_stat_statements_reset%'
            ORDER BY s.total_exec_time DESC"
    } >"$OUT/raw/$1-statements.tsv"
}
costs_write() {
    local id=$1 emails=$2 name=$3 out="$OUT/raw/$1-costs.txt" statements=()
    ((PG_STATEMENTS == 0)) || statements=("$OUT/raw/$id-statements.tsv")
    python3 "$ROOT/scripts/bench/costs.py" diff "$WORK/costs-$id.before" "$WORK/costs-$id.after" \
        "${emails:-0}" "$(getconf CLK_TCK)" "${statements[@]}" >"$out"
    awk -F= '
        /^cpu_ms_per_email\./ { sub(/^cpu_ms_per_email\./, "", $1); cpu = cpu sprintf(" %s %s", $1, $2) }
        $1 == "wal_bytes_per_email" { wal = $2 }
        $1 == "xacts_per_email" { x = $2 }
        $1 == "rows_inserted_per_email" { ins = $2 }
        $1 == "rows_updated_per_email" { upd = $2 }
        $1 == "rows_deleted_per_email" { del = $2 }
        $1 == "broker_published_per_email" { pub = $2 }
        $1 == "statements_calls_per_email" { calls = $2 }
        END {
            printf "    costs per email: CPU ms%s; WAL %s B; %s transactions; rows %s inserted, %s updated, %s deleted", cpu, wal, x, ins, upd, del
            if (pub != "") printf "; %s broker publishes", pub
            if (calls != "") printf "; %s statements", calls
            printf "\n"
        }' "$out"
    printf '%s\tcosts\t%s\t%s\n' "$id" "$name" "$out" >>"$SCENARIOS"
}

# ----------------------------------------------------------------------- scenarios
# run_wrk ID NAME URL [KEY]
# With WRK_PATHS_FILE or WRK_BODIES_FILE set, requests vary (see wrk-report.lua), and
# with WRK_MEASURE_OFFSET the measured run starts that many lines past the warm-up's;
# with CONNECTIONS set, that many connections instead of BENCH_CONNECTIONS.
run_wrk() {
    local id=$1 name=$2 url=$3 key=${4:-} out="$OUT/raw/$1-wrk.txt"
    local conns=${CONNECTIONS:-$BENCH_CONNECTIONS}
    local args=(-t "$BENCH_THREADS" -c "$conns" --timeout 10s)
    log "bench: $id  $name  (wrk, ${BENCH_DURATION}s, $conns connections)"
    # One request first, for a clear message when the route does not answer 2xx.
    local code auth=() first=(--max-time 30)
    [[ -z $key ]] || auth=(-H "Authorization: Bearer $key")
    if [[ -n ${WRK_BODIES_FILE:-} ]]; then
        auth+=(-H 'Content-Type: application/json')
        first+=(-X POST --data "$(head -n 1 "$WRK_BODIES_FILE")")
    fi
    code="$(curl -sS -o "$WORK/resp" -w '%{http_code}' "${first[@]}" "${auth[@]}" "$url")" ||
        die "request to $url failed"
    [[ $code == 2?? ]] || die "$url answered $code: $(head -c 500 "$WORK/resp")"
    args+=("${auth[@]}")
    if ((BENCH_WARMUP > 0)); then
        wrk "${args[@]}" -d "${BENCH_WARMUP}s" -s "$LUA" "$url" >/dev/null
    fi
    WRK_OFFSET="${WRK_MEASURE_OFFSET:-0}" \
        wrk "${args[@]}" -d "${BENCH_DURATION}s" --latency -s "$LUA" "$url" >"$out" 2>&1 ||
        { cat "$out" >&2; die "wrk failed in scenario $id"; }
    grep '^WRK_RESULT' "$out" | sed 's/^/    /' || true
    # ROWS_PER_REQUEST: items each request writes (the report gives rows per second too).
    printf '%s\twrk\t%s\t%s\t\t%s\n' "$id" "$name" "$out" "${ROWS_PER_REQUEST:-}" >>"$SCENARIOS"
}

# pg_free_connections: the connections the server has left for ordinary users (every process
# of pg_stat_activity counted, background ones too: an estimate on the safe side).
pg_free_connections() {
    psql_pg -d postgres -c "SELECT current_setting('max_connections')::int
        - current_setting('superuser_reserved_connections')::int - count(*) FROM pg_stat_activity"
}

# run_pgbench ID NAME DB SQLFILE
# With COSTS set, the measured run's per-transaction costs are recorded (costs_begin/costs_end).
run_pgbench() {
    local id=$1 name=$2 db=$3 sql=$4 out="$OUT/raw/$1-pgbench.txt"
    local args=(-n -M prepared -c "${CONNECTIONS:-$BENCH_CONNECTIONS}" -j "$BENCH_THREADS" -f "$sql"
        -h 127.0.0.1 -p 5432 -U postgres)
    # PGBENCH_VARS: "-D NAME=VALUE ..." variables the script starts with.
    local vars=()
    [[ -z ${PGBENCH_VARS:-} ]] || read -ra vars <<<"$PGBENCH_VARS"
    args+=("${vars[@]}")
    log "bench: $id  $name  (pgbench, ${BENCH_DURATION}s, ${CONNECTIONS:-$BENCH_CONNECTIONS} connections)"
    # `run` tells a script's warm-up from its measured run (the upsert script names its
    # new contacts after it, so the measured run inserts as many as the warm-up did).
    # Every client needs a server connection beside the pools of the services still running
    # (16 each by default): say so plainly rather than let pgbench fail on "too many clients".
    local free
    free="$(pg_free_connections)"
    ((free >= ${CONNECTIONS:-$BENCH_CONNECTIONS})) ||
        die "scenario $id needs ${CONNECTIONS:-$BENCH_CONNECTIONS} connections and the server has $free free (max_connections)"
    # now_ms: when this pgbench started (Unix milliseconds), for scripts that make time-ordered ids.
    if ((BENCH_WARMUP > 0)); then
        PGPASSFILE=/dev/null/none pgbench "${args[@]}" -D run=warmup -D now_ms="$(date +%s%3N)" \
            -T "$BENCH_WARMUP" "$db" >"$out.warmup" 2>&1 ||
            { tail -n 30 "$out.warmup" >&2; die "pgbench warm-up failed in scenario $id"; }
    fi
    [[ -z ${COSTS:-} ]] || costs_begin "$id"
    PGPASSFILE=/dev/null/none pgbench "${args[@]}" -D run=measure -D now_ms="$(date +%s%3N)" \
        -T "$BENCH_DURATION" --log --log-prefix="$WORK/pgbench-$id" "$db" >"$out" 2>&1 ||
        { tail -n 30 "$out" >&2; die "pgbench failed in scenario $id"; }
    grep -E '^(tps|number of failed)' "$out" | sed 's/^/    /' || true
    if [[ -n ${COSTS:-} ]]; then
        costs_end "$id"
        costs_write "$id" "$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$out")" \
            "$name: per transaction"
    fi
    printf '%s\tpgbench\t%s\t%s\t%s\t%s\n' "$id" "$name" "$out" "$WORK/pgbench-$id" "${ROWS_PER_REQUEST:-}" >>"$SCENARIOS"
}

if read_scenarios; then
! memory || run_wrk a "memory-api GET /healthz" "$MEMORY_URL/healthz"
run_wrk b "mail-api GET /healthz" "$MAIL_URL/healthz"
! memory || run_wrk c "memory-api GET /api/v1/products/bench-product" "$MEMORY_URL/api/v1/products/bench-product" "$MEMORY_KEY"
run_wrk d "mail-api GET /api/v1/sites?limit=1" "$MAIL_URL/api/v1/sites?limit=1" "$MAIL_KEY"
! memory || run_pgbench e "pgbench bench_memory: SQL of c" bench_memory "$WORK/memory.sql"
run_pgbench f "pgbench bench_mail: SQL of d" bench_mail "$WORK/mail.sql"
! memory || run_wrk g "memory-api GET /api/v1/memory/identity" "$MEMORY_URL/api/v1/memory/identity" "$MEMORY_KEY"
! memory || run_pgbench h "pgbench bench_memory: SQL of g" bench_memory "$WORK/identity.sql"
fi

# --------------------------------------------------------------- mail writes (m, n, o)
MAIL_BODIES="$ROOT/scripts/bench/mail-bodies.py"
if mail_scenarios; then
python3 "$MAIL_BODIES" identify 400000 >"$WORK/identify.bodies"
WRK_BODIES_FILE="$WORK/identify.bodies" WRK_MEASURE_OFFSET=200000 run_wrk m \
    "mail-api POST /api/v1/identify (about half inserts, half updates)" \
    "$MAIL_URL/api/v1/identify" "$MAIL_KEY"
# The transaction of route m as the route runs it (db/contacts.rs insert and merge,
# db/usage.rs add_contact), with the same mix: half the transactions name a new contact
# (seq grows per client), half one of the 50 this client named last. Ids are time-ordered,
# as the API's UUID v7 are.
PG_EMAIL="'pg-' || :run || '-' || :client_id || '-' || :idx || '@bench.example'"
cat >"$WORK/identify.sql" <<EOF
\\set coin random(0, 1)
\\if :coin = 1
\\set seq :seq + 1
\\set idx :seq
\\else
\\set idx greatest(:seq - random(0, 49), 1)
\\endif
BEGIN;
WITH ins AS (INSERT INTO contacts (id, project_id, email, first_name, last_name, properties, tags, attribution, source) VALUES ((lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid, '$PROJECT_ID', $PG_EMAIL, 'Ada', NULL, '{"plan": "pro", "visits": 3}', ARRAY['bench', 'pgbench'], '{}', 'identify') ON CONFLICT (project_id, email) DO NOTHING RETURNING id, email, first_name, last_name, properties, tags, attribution, source, created_at, updated_at) SELECT count(*) AS created FROM ins \\gset
\\if :created
INSERT INTO project_usage (project_id, contacts) SELECT '$PROJECT_ID', 1 WHERE 9223372036854775807 >= 1 ON CONFLICT (project_id) DO UPDATE SET contacts = project_usage.contacts + 1 WHERE project_usage.contacts < 9223372036854775807;
\\else
UPDATE contacts SET first_name = coalesce('Ada', first_name), last_name = coalesce(NULL, last_name), properties = jsonb_deep_merge(properties, '{"plan": "pro", "visits": 3}'), tags = tags || ARRAY(SELECT t FROM unnest(ARRAY['bench', 'pgbench']::text[]) WITH ORDINALITY AS u(t, i) WHERE t <> ALL (tags) ORDER BY i), updated_at = now() WHERE project_id = '$PROJECT_ID' AND email = $PG_EMAIL RETURNING id, email, first_name, last_name, properties, tags, attribution, source, created_at, updated_at;
\\endif
COMMIT;
\\set bench_clock 0
EOF
PGBENCH_VARS="-D seq=0" run_pgbench n "pgbench bench_mail: the upsert transaction of m" bench_mail "$WORK/identify.sql"

# One active triggered campaign: a fifth of the events ("signup") enroll their contact.
CAMPAIGN_ID="$(post_created "$MAIL_URL/api/v1/campaigns" "$MAIL_KEY" \
    "{\"name\":\"bench-signup\",\"site_id\":\"$SITE_ID\",\"type\":\"triggered\",\"trigger_event_name\":\"signup\"}")"
psql_pg -d bench_mail -c "UPDATE campaigns SET status = 'active' WHERE id = '$CAMPAIGN_ID'" >/dev/null
python3 "$MAIL_BODIES" events 400000 >"$WORK/events.bodies"
WRK_BODIES_FILE="$WORK/events.bodies" WRK_MEASURE_OFFSET=200000 run_wrk o \
    "mail-api POST /api/v1/events (new and known contacts, one triggered campaign)" \
    "$MAIL_URL/api/v1/events" "$MAIL_KEY"
fi

# ------------------------------------------------------------- send pipeline (t, u)
# POST /api/v1/send into the Resend stub (provider-stub, a process of its own) through a
# send-worker: t is the route as clients see it (it answers once the provider has, or 202
# after SENDING__REPLY_WAIT_MS), u the pipeline: the emails accepted by the API during t,
# divided by the time from t's start until the provider's acceptance of the last of them was
# recorded.
if send_scenarios; then
STUB_ADDR=127.0.0.1:18090
WORKER_ADDR=127.0.0.1:18083
SEND_CONNS="${BENCH_SEND_CONNECTIONS:-64}"
for addr in "$STUB_ADDR" "$WORKER_ADDR"; do
    ! tcp_open "${addr%:*}" "${addr##*:}" || die "$addr is already in use (a bench still running?)"
done
"$BIN/provider-stub" --resend-port "${STUB_ADDR##*:}" --api-key re_bench \
    >"$OUT/logs/provider-stub.log" 2>&1 </dev/null &
PIDS+=($!)
STUB_PID=$!
BOUNCE_ADDR=127.0.0.1:18025
BOUNCE_DOMAIN=bounces.bench.test
BOUNCE_SECRET="$(head -c 32 /dev/urandom | base64)"
! tcp_open "${BOUNCE_ADDR%:*}" "${BOUNCE_ADDR##*:}" || die "$BOUNCE_ADDR is already in use"
env "${svc_env[@]}" MAIL_DATABASE__URL="$MAIL_DB_URL" MAIL_WORKER__BIND="$WORKER_ADDR" \
    MAIL_DELIVERY__RESEND_BASE_URL="http://$STUB_ADDR" \
    MAIL_BOUNCES__DOMAIN="$BOUNCE_DOMAIN" MAIL_BOUNCES__SECRET="$BOUNCE_SECRET" \
    MAIL_BOUNCES__BIND="$BOUNCE_ADDR" \
    "$BIN/send-worker" >"$OUT/logs/send-worker.log" 2>&1 </dev/null &
PIDS+=($!)
SEND_WORKER_PID=$!
wait_healthy send-worker "$SEND_WORKER_PID" "http://$WORKER_ADDR"
code="$(curl -sS -o "$WORK/resp" -w '%{http_code}' --max-time 10 -X PUT \
    -H "Authorization: Bearer $MAIL_KEY" -H 'Content-Type: application/json' \
    --data '{"kind":"resend","api_key":"re_bench"}' "$MAIL_URL/api/v1/delivery/provider")" ||
    die "PUT /delivery/provider failed"
[[ $code == 200 ]] || die "PUT /delivery/provider answered $code: $(head -c 500 "$WORK/resp")"
python3 "$MAIL_BODIES" send 100000 "$SITE_ID" >"$WORK/send.bodies"

# The processes whose CPU time the costs of u, ur and up count: PostgreSQL is the postmaster
# (the parent of its checkpointer) with all its processes, RabbitMQ its Erlang VM (beam.smp).
pg_pid="$(psql_pg -d postgres -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")"
[[ -z $pg_pid || ! -r /proc/$pg_pid/stat ]] || pg_pid="$(awk '{ sub(/.*\) /, ""); print $2 }' "/proc/$pg_pid/stat")"
mq_pid="$(as_root timeout 60 rabbitmqctl -q eval 'list_to_integer(os:getpid()).' 2>/dev/null)" || mq_pid=""
[[ $pg_pid =~ ^[0-9]+$ ]] || warn "PostgreSQL's postmaster not found on this machine: its CPU is left out of the costs"
[[ $mq_pid =~ ^[0-9]+$ ]] || warn "RabbitMQ's process not found (rabbitmqctl eval): its CPU is left out of the costs"
COST_PROCS=(mail-api="$MAIL_PID" send-worker="$SEND_WORKER_PID" provider-stub="$STUB_PID"
    postgres="$pg_pid" rabbitmq="$mq_pid")
# pg_stat_statements, when the server loads it (scripts/infra.sh configures it, track none):
# tracking top-level statements for the send scenarios, restored at exit.
if [[ ${BENCH_PG_STATEMENTS:-1} != 0 ]]; then
    if [[ ",$(psql_pg -d postgres -c 'SHOW shared_preload_libraries' | tr -d ' ')," == *,pg_stat_statements,* ]]; then
        psql_pg -d bench_mail -c 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements'
        PGSS_TRACK_WAS="$(psql_pg -d postgres -c 'SHOW pg_stat_statements.track')"
        if [[ $PGSS_TRACK_WAS == none ]]; then
            psql_pg -d postgres -c "ALTER SYSTEM SET pg_stat_statements.track = 'top'" \
                -c "SELECT pg_reload_conf()" >/dev/null
        fi
        PG_STATEMENTS=1
        log "bench: pg_stat_statements tracks the send scenarios' statements (top level)"
    else
        warn "pg_stat_statements is not loaded (shared_preload_libraries): the costs leave out the statements; scripts/infra.sh configures it and the server loads it at its next start"
    fi
fi

# unsent: emails of the bench project the provider has not taken yet.
unsent() {
    psql_pg -d bench_mail -c "SELECT count(*) FROM email_log WHERE project_id = '$PROJECT_ID' AND status IN ('accepted', 'queued')"
}
# drain: wait until every accepted email has reached the provider (120 s at most).
drain() {
    local start=$SECONDS left
    while left="$(unsent)" && ((left > 0)); do
        ((SECONDS - start < 120)) || die "$left emails still unsent 120 s after scenario t"
        sleep 0.2
    done
}
stub_accepted() { curl -fsS --max-time 5 "http://$STUB_ADDR/stats" | json_get accepted; }

# send_pipeline T U BODIES WHAT: the route scenario T over BODIES and the pipeline scenario U.
# The warm-up sends too: the measured run starts from a drained queue, past the warm-up's
# bodies (no address is sent to twice).
send_pipeline() {
    local t=$1 u=$2 bodies=$3 what=$4 before after t0 emails sent seconds
    if ((BENCH_WARMUP > 0)); then
        WRK_BODIES_FILE="$bodies" WRK_OFFSET=0 wrk -t "$BENCH_THREADS" -c "$SEND_CONNS" \
            --timeout 10s -H "Authorization: Bearer $MAIL_KEY" -H 'Content-Type: application/json' \
            -d "${BENCH_WARMUP}s" -s "$LUA" "$MAIL_URL/api/v1/send" >/dev/null
        drain
    fi
    # The windows compared (u and up) start from the same state of the tables: the dead rows
    # an earlier window left (the outbox's deleted jobs, the emails' old versions, the month's
    # counter) would otherwise slow only the later one, for autovacuum has no time to run
    # between them.
    psql_pg -d bench_mail -c "VACUUM (ANALYZE)" >/dev/null
    before="$(stub_accepted)"
    costs_begin "$u"
    t0="$(psql_pg -d bench_mail -c "SELECT clock_timestamp()")"
    WRK_BODIES_FILE="$bodies" WRK_MEASURE_OFFSET=50000 BENCH_WARMUP=0 \
        CONNECTIONS="$SEND_CONNS" run_wrk "$t" \
        "mail-api POST /api/v1/send$what (answered after the provider, Resend stub)" \
        "$MAIL_URL/api/v1/send" "$MAIL_KEY"
    drain
    costs_end "$u"
    after="$(stub_accepted)"
    read -r emails sent seconds < <(psql_pg -d bench_mail -F ' ' -c "
        SELECT count(*), count(*) FILTER (WHERE status = 'sent'),
               coalesce(extract(epoch FROM max(sent_at) - '$t0'::timestamptz), 0)
        FROM email_log WHERE project_id = '$PROJECT_ID' AND created_at >= '$t0'::timestamptz")
    {
        echo "emails=$emails"
        echo "sent=$sent"
        echo "seconds=$seconds"
        echo "provider_accepted=$((after - before))"
    } >"$OUT/raw/$u-pipeline.txt"
    sed 's/^/    /' "$OUT/raw/$u-pipeline.txt" | tr '\n' ' '
    echo
    printf '%s\tpipeline\t%s\t%s\n' "$u" \
        "send pipeline$what: API accept to the provider's acceptance recorded" \
        "$OUT/raw/$u-pipeline.txt" >>"$SCENARIOS"
    costs_write "$u" "$emails" "send pipeline$what: per email, t's start until drained"
}
send_pipeline t u "$WORK/send.bodies" ""
# tp, up: the same with a personalized template (subject, HTML and text holding template
# syntax and `data`, rendered per recipient by the send-worker); report.py sets up's rate
# next to u's (the goal: within 10%). It runs right after u, before ur's writes, so that
# the two windows it compares find the tables alike.
python3 "$MAIL_BODIES" send-personal 100000 "$SITE_ID" >"$WORK/send-personal.bodies"
send_pipeline tp up "$WORK/send-personal.bodies" ", personalized"

# ur: the reference of u, pgbench running the pipeline's own statements for one email per
# transaction (scripts/bench/send-pipeline.pgbench: the write, the claim, the outcome, the
# outbox delete, each its own transaction as the pipeline commits them) with as many clients
# as t has connections; report.py prints u's ratio to it (goal: at least 0.6). Its emails are
# the bench project's (ref-RUN-CLIENT-N@bench.example); a transaction cut short at the end
# leaves its email unsent with its outbox job, which the relay would publish to the
# send-worker during a later scenario: those are deleted after the run. The services' pools
# stay connected: should the server (max_connections) not have as many connections free beside
# them, ur runs with the connections it has, less 2, and says so (pgbench's output names them).
ref_clients=$SEND_CONNS
free="$(pg_free_connections)"
if ((free - 2 < ref_clients)); then
    ref_clients=$((free - 2))
    ((ref_clients >= BENCH_THREADS)) || die "scenario ur: the server has $free connections free (max_connections)"
    warn "scenario ur: $free connections free beside the services' pools (max_connections): $ref_clients clients, not $SEND_CONNS"
fi
PGBENCH_VARS="-D seq=0 -D project=$PROJECT_ID -D site=$SITE_ID" COSTS=1 CONNECTIONS="$ref_clients" \
    run_pgbench ur "pgbench bench_mail: the send pipeline's statements for one email (write, claim, outcome, outbox delete)" \
    bench_mail "$ROOT/scripts/bench/send-pipeline.pgbench"
read -r ref_sent ref_jobs ref_unsent < <(psql_pg -d bench_mail -F ' ' -c "
    WITH ref AS (SELECT id, status FROM email_log WHERE project_id = '$PROJECT_ID'
                 AND to_email LIKE 'ref-%@bench.example'),
    jobs AS (DELETE FROM outbox WHERE project_id = '$PROJECT_ID' AND id IN (SELECT id FROM ref)
             RETURNING id),
    unsent AS (DELETE FROM email_log WHERE project_id = '$PROJECT_ID'
               AND id IN (SELECT id FROM ref WHERE status <> 'sent') RETURNING id)
    SELECT (SELECT count(*) FROM email_log WHERE project_id = '$PROJECT_ID'
              AND to_email LIKE 'ref-measure-%@bench.example' AND status = 'sent'),
           (SELECT count(*) FROM jobs), (SELECT count(*) FROM unsent)")
ref_done="$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$OUT/raw/ur-pgbench.txt")"
((ref_sent >= ref_done && ref_done > 0)) ||
    die "scenario ur: ${ref_done:-no} transactions but $ref_sent emails sent: scripts/bench/send-pipeline.pgbench no longer does what the pipeline does"
log "bench: ur sent $ref_sent emails; cut short at the end: $ref_jobs outbox jobs and $ref_unsent unsent emails (deleted)"

# ---------------------------------------------------------- campaign pipeline (x)
# One step to BENCH_CAMPAIGN_CONTACTS contacts (100,000): they are subscribed to a site of
# their own (by SQL, as the export's contacts), POST /campaigns/launch enrolls them all, and
# mail-api's scheduler releases their emails to the send queue, the send-worker and the
# Resend stub of u. x is the emails per second from the first provider acceptance recorded
# to the last; report.py sets it next to u's rate.
CAMPAIGN_N="${BENCH_CAMPAIGN_CONTACTS:-100000}"
CAMPAIGN_SITE="$(post_created "$MAIL_URL/api/v1/sites" "$MAIL_KEY" \
    '{"name":"Campaign","slug":"campaign","from_name":"Campaign"}')"
seed_start=$SECONDS
psql_pg -d bench_mail >/dev/null <<EOF
INSERT INTO contacts (id, project_id, email, source, created_at, updated_at)
SELECT (lpad(to_hex(1800000000000 + i), 12, '0') || '7' || lpad(to_hex(i), 19, '0'))::uuid,
       '$PROJECT_ID', 'reader' || i || '@campaign.example', 'identify', now(), now()
FROM generate_series(1, $CAMPAIGN_N) AS i;
INSERT INTO contact_sites (contact_id, site_id)
SELECT id, '$CAMPAIGN_SITE' FROM contacts
WHERE project_id = '$PROJECT_ID' AND email LIKE '%@campaign.example';
ANALYZE contacts;
ANALYZE contact_sites;
EOF
log "bench: $CAMPAIGN_N campaign contacts seeded in $((SECONDS - seed_start)) s"
before="$(stub_accepted)"
launch='{"name":"bench-campaign","site_id":"'"$CAMPAIGN_SITE"'","emails":[{"subject":"News","html":"<p>News: <a href=\"https://example.com/news\">read it</a></p>","text":"News"}]}'
code="$(curl -sS -o "$WORK/resp" -w '%{http_code}' --max-time 600 -X POST \
    -H "Authorization: Bearer $MAIL_KEY" -H 'Content-Type: application/json' \
    --data "$launch" "$MAIL_URL/api/v1/campaigns/launch")" || die "POST /campaigns/launch failed"
[[ $code == 201 ]] || die "POST /campaigns/launch answered $code: $(head -c 500 "$WORK/resp")"
BENCH_CAMPAIGN="$(json_get id <"$WORK/resp")"
enrolled="$(json_get enrolled <"$WORK/resp")"
((enrolled == CAMPAIGN_N)) || die "the launch enrolled $enrolled contacts, not $CAMPAIGN_N"
campaign_sent() {
    psql_pg -d bench_mail -c "SELECT count(*) FROM email_log WHERE campaign_id = '$BENCH_CAMPAIGN' AND status = 'sent'"
}
start=$SECONDS
# The stub's counter is polled until every email reached it (a count over email_log every
# half second would scan the table under the load it measures), then email_log until every
# outcome is recorded.
while accepted=$(($(stub_accepted) - before)) && ((accepted < CAMPAIGN_N)); do
    ((SECONDS - start < 600 + CAMPAIGN_N / 100)) ||
        die "$accepted of $CAMPAIGN_N campaign emails accepted by the provider after $((SECONDS - start)) s"
    sleep 0.5
done
while sent="$(campaign_sent)" && ((sent < CAMPAIGN_N)); do
    ((SECONDS - start < 600 + CAMPAIGN_N / 100)) ||
        die "$sent of $CAMPAIGN_N campaign emails sent after $((SECONDS - start)) s"
    sleep 0.5
done
after="$(stub_accepted)"
read -r emails sent seconds < <(psql_pg -d bench_mail -F ' ' -c "
    SELECT count(*), count(*) FILTER (WHERE status = 'sent'),
           coalesce(extract(epoch FROM max(sent_at) - min(sent_at)), 0)
    FROM email_log WHERE campaign_id = '$BENCH_CAMPAIGN'")
{
    echo "emails=$emails"
    echo "sent=$sent"
    echo "seconds=$seconds"
    echo "provider_accepted=$((after - before))"
} >"$OUT/raw/x-campaign.txt"
sed 's/^/    /' "$OUT/raw/x-campaign.txt" | tr '\n' ' '
echo
printf '%s\tpipeline\t%s\t%s\n' x "campaign: one step to $CAMPAIGN_N contacts, first to last provider acceptance" \
    "$OUT/raw/x-campaign.txt" >>"$SCENARIOS"

# ---------------------------------------------------------- automation (xa)
# An active automation whose BENCH_CAMPAIGN_CONTACTS (100,000) contacts (the campaign's, on
# its site) wait on its first step, a wait that ends now: mail-api's automation engine
# advances them to the send step (each step once per contact, FOR UPDATE SKIP LOCKED batches)
# and the emails go through the outbox relay, the send-worker and the stub as x's. xa is the
# emails per second from the first provider acceptance to the last; report.py sets it next
# to x's rate (target: at least 0.9).
AUTOMATION_ID="$(post_created "$MAIL_URL/api/v1/automations" "$MAIL_KEY" \
    '{"name":"bench-automation","site_id":"'"$CAMPAIGN_SITE"'","trigger":{"type":"event","event":"bench.never"},"steps":[{"type":"wait","minutes":1},{"type":"send_email","subject":"Flow","html":"<p>Flow: <a href=\"https://example.com/flow\">read it</a></p>","text":"Flow"}]}')"
code="$(curl -sS -o "$WORK/resp" -w '%{http_code}' -X POST -H "Authorization: Bearer $MAIL_KEY" \
    "$MAIL_URL/api/v1/automations/$AUTOMATION_ID/activate")"
[[ $code == 200 ]] || die "POST /automations/{id}/activate answered $code: $(head -c 500 "$WORK/resp")"
before="$(stub_accepted)"
# Every contact has run the wait already (its step run recorded) and is due now.
psql_pg -d bench_mail >/dev/null <<EOF
WITH enrolled AS (
  INSERT INTO automation_enrollments (id, project_id, automation_id, contact_id, step_index,
    next_run_at, created_at, updated_at)
  SELECT uuid_v7(), '$PROJECT_ID', '$AUTOMATION_ID', c.id, 1, now(), now(), now()
  FROM contacts c WHERE c.project_id = '$PROJECT_ID' AND c.email LIKE '%@campaign.example'
  RETURNING id)
INSERT INTO automation_step_runs (enrollment_id, step_index, project_id, outcome, created_at)
SELECT id, 0, '$PROJECT_ID', 'waited', now() FROM enrolled;
ANALYZE automation_enrollments;
EOF
automation_sent() {
    psql_pg -d bench_mail -c "SELECT count(*) FROM email_log WHERE to_email LIKE '%@campaign.example' AND subject = 'Flow' AND status = 'sent'"
}
start=$SECONDS
while accepted=$(($(stub_accepted) - before)) && ((accepted < CAMPAIGN_N)); do
    ((SECONDS - start < 600 + CAMPAIGN_N / 100)) ||
        die "$accepted of $CAMPAIGN_N automation emails accepted by the provider after $((SECONDS - start)) s"
    sleep 0.5
done
while sent="$(automation_sent)" && ((sent < CAMPAIGN_N)); do
    ((SECONDS - start < 600 + CAMPAIGN_N / 100)) ||
        die "$sent of $CAMPAIGN_N automation emails sent after $((SECONDS - start)) s"
    sleep 0.5
done
after="$(stub_accepted)"
read -r emails sent seconds < <(psql_pg -d bench_mail -F ' ' -c "
    SELECT count(*), count(*) FILTER (WHERE status = 'sent'),
           coalesce(extract(epoch FROM max(sent_at) - min(sent_at)), 0)
    FROM email_log WHERE to_email LIKE '%@campaign.example' AND subject = 'Flow'")
{
    echo "emails=$emails"
    echo "sent=$sent"
    echo "seconds=$seconds"
    echo "provider_accepted=$((after - before))"
} >"$OUT/raw/xa-automation.txt"
sed 's/^/    /' "$OUT/raw/xa-automation.txt" | tr '\n' ' '
echo
printf '%s\tpipeline\t%s\t%s\n' xa "automation: $CAMPAIGN_N contacts past a wait to a send step, first to last provider acceptance" \
    "$OUT/raw/xa-automation.txt" >>"$SCENARIOS"

# ---------------------------------------------------------- outbound webhooks (y)
# BENCH_WEBHOOK_EVENTS (10,000) events written at once (by SQL, as the campaign engine writes
# campaign.completed) to a project subscribed to them: the fan-out trigger makes a delivery
# each, mail-api's relay publishes them, the send-worker signs and posts them to a receiver
# on loopback (scripts/bench/webhook-receiver.py, 204). y is the events per second from the
# write to the last delivery recorded.
WEBHOOK_N="${BENCH_WEBHOOK_EVENTS:-10000}"
RECEIVER_ADDR=127.0.0.1:18092
! tcp_open "${RECEIVER_ADDR%:*}" "${RECEIVER_ADDR##*:}" || die "$RECEIVER_ADDR is already in use"
python3 "$ROOT/scripts/bench/webhook-receiver.py" "${RECEIVER_ADDR##*:}" \
    >"$OUT/logs/webhook-receiver.log" 2>&1 </dev/null &
PIDS+=($!)
for _ in $(seq 50); do tcp_open "${RECEIVER_ADDR%:*}" "${RECEIVER_ADDR##*:}" && break; sleep 0.1; done
post_created "$MAIL_URL/api/v1/webhook-subscriptions" "$MAIL_KEY" \
    '{"url":"http://'"$RECEIVER_ADDR"'/hooks","events":["campaign.completed"]}' >/dev/null
t0="$(psql_pg -d bench_mail -c "SELECT clock_timestamp()")"
psql_pg -d bench_mail -c "
    INSERT INTO outbound_events (id, project_id, type, data)
    SELECT uuid_v7(), '$PROJECT_ID', 'campaign.completed',
           jsonb_build_object('campaign_id', gen_random_uuid(), 'n', i)
    FROM generate_series(1, $WEBHOOK_N) AS i" >/dev/null
webhooks_delivered() {
    psql_pg -d bench_mail -c "SELECT count(*) FROM webhook_deliveries WHERE project_id = '$PROJECT_ID' AND status = 'delivered'"
}
start=$SECONDS
while delivered="$(webhooks_delivered)" && ((delivered < WEBHOOK_N)); do
    ((SECONDS - start < 600)) || die "$delivered of $WEBHOOK_N webhooks delivered after $((SECONDS - start)) s"
    sleep 0.2
done
read -r emails sent seconds < <(psql_pg -d bench_mail -F ' ' -c "
    SELECT count(*), count(*) FILTER (WHERE status = 'delivered'),
           coalesce(extract(epoch FROM max(delivered_at) - '$t0'::timestamptz), 0)
    FROM webhook_deliveries WHERE project_id = '$PROJECT_ID'")
{
    echo "emails=$emails"
    echo "sent=$sent"
    echo "seconds=$seconds"
    echo "provider_accepted=$(curl -fsS --max-time 5 "http://$RECEIVER_ADDR/stats")"
} >"$OUT/raw/y-webhooks.txt"
sed 's/^/    /' "$OUT/raw/y-webhooks.txt" | tr '\n' ' '
echo
printf '%s\tpipeline\t%s\t%s\n' y "outbound webhooks: $WEBHOOK_N events written to delivered (signed, local receiver)" \
    "$OUT/raw/y-webhooks.txt" >>"$SCENARIOS"

# ------------------------------------------------------------ bounces over SMTP (bd)
# BENCH_DSNS (10,000) delivery status notifications (RFC 3464), one for each of as many of
# x's sent emails, to their VERP return paths over 8 SMTP sessions to the send-worker's bounce
# receiver (scripts/bench/dsn-load.py). The receiver records each and the webhook.inbound
# queue applies it: bd is the DSNs per second from the first session's start until the last
# email is recorded bounced (goal: at least 500 a second); raw/bd-costs.txt what one DSN cost.
DSN_N="${BENCH_DSNS:-10000}"
psql_pg -d bench_mail -F ' ' -c "SELECT id, to_email FROM email_log
    WHERE campaign_id = '$BENCH_CAMPAIGN' AND status = 'sent' ORDER BY id LIMIT $DSN_N" >"$WORK/dsn.ids"
dsn_n="$(wc -l <"$WORK/dsn.ids")"
bounced() {
    psql_pg -d bench_mail -c "SELECT count(*) FROM email_log WHERE campaign_id = '$BENCH_CAMPAIGN' AND status = 'bounced'"
}
costs_begin bd
t0="$(date +%s.%N)"
python3 "$ROOT/scripts/bench/dsn-load.py" "$BOUNCE_ADDR" "$BOUNCE_DOMAIN" "$BOUNCE_SECRET" \
    "$WORK/dsn.ids" 8 >"$WORK/dsn.out" 2>"$OUT/logs/dsn-load.log" || die "dsn-load.py failed: $(cat "$OUT/logs/dsn-load.log")"
start=$SECONDS
while applied="$(bounced)" && ((applied < dsn_n)); do
    ((SECONDS - start < 600)) || die "$applied of $dsn_n DSNs applied after $((SECONDS - start)) s"
    sleep 0.2
done
t1="$(date +%s.%N)"
costs_end bd
{
    echo "emails=$dsn_n"
    echo "sent=$applied"
    echo "seconds=$(python3 -c "print(f'{$t1 - $t0:.3f}')")"
    echo "provider_accepted=$(sed -n 's/^accepted=//p' "$WORK/dsn.out")"
} >"$OUT/raw/bd-dsns.txt"
sed 's/^/    /' "$OUT/raw/bd-dsns.txt" | tr '\n' ' '
echo
printf '%s\tpipeline\t%s\t%s\n' bd "bounces over SMTP: $dsn_n DSNs to the receiver until applied (8 sessions)" \
    "$OUT/raw/bd-dsns.txt" >>"$SCENARIOS"
costs_write bd "$dsn_n" "what one DSN cost (the receiver is in the send-worker; the load generator counts in the machine's total)"
fi

# ------------------------------------------------------------- platform migration (mg)
# A Mailchimp-shaped account of MIGRATION_CONTACTS members in 3 audiences, one in 25
# unsubscribed (scripts/bench/mailchimp-account.py: the wire format of the in-test server of
# services/mail-api/tests/api/platform_migrations/mailchimp.rs), migrated into a project of its
# own (enterprise: no contact limit): connect, start the run over the API, read it every 0.2 s
# until it ends. seconds: the run's created_at to its finished_at (the relay, every page, the
# templates and campaigns); peak RSS: mail-api's and the send-worker's, whose `platform.migrate`
# consumer runs the job (each reset before the run where the kernel allows it).
if migration_scenarios; then
log "bench: mg  platform migration of $MIGRATION_CONTACTS Mailchimp contacts"
! tcp_open "${MAILCHIMP_ADDR%:*}" "${MAILCHIMP_ADDR##*:}" || die "$MAILCHIMP_ADDR is already in use"
MAILCHIMP_KEY="0123456789abcdef0123456789abcdef-us21"
python3 "$ROOT/scripts/bench/mailchimp-account.py" "${MAILCHIMP_ADDR##*:}" "$MAILCHIMP_KEY" \
    "$MIGRATION_CONTACTS" >"$OUT/logs/mailchimp-account.log" 2>&1 </dev/null &
PIDS+=($!)
for _ in $(seq 1 50); do
    tcp_open "${MAILCHIMP_ADDR%:*}" "${MAILCHIMP_ADDR##*:}" && break
    sleep 0.1
done
tcp_open "${MAILCHIMP_ADDR%:*}" "${MAILCHIMP_ADDR##*:}" || die "the Mailchimp account did not listen on $MAILCHIMP_ADDR"
if [[ -z ${SEND_WORKER_PID:-} ]]; then
    WORKER_ADDR=127.0.0.1:18083
    ! tcp_open "${WORKER_ADDR%:*}" "${WORKER_ADDR##*:}" || die "$WORKER_ADDR is already in use"
    env "${svc_env[@]}" MAIL_DATABASE__URL="$MAIL_DB_URL" MAIL_WORKER__BIND="$WORKER_ADDR" \
        "$BIN/send-worker" >"$OUT/logs/send-worker.log" 2>&1 </dev/null &
    PIDS+=($!)
    SEND_WORKER_PID=$!
    wait_healthy send-worker "$SEND_WORKER_PID" "http://$WORKER_ADDR"
fi
MIG_PROJECT="$(admin create-migration-project --mail-db "$MAIL_DB_URL" mail create-project \
    --account "$ACCOUNT_ID" --name migration --plan enterprise | json_get project_id)"
MIG_KEY="$(admin migration-create-key --mail-db "$MAIL_DB_URL" mail create-key \
    --project "$MIG_PROJECT" --scope admin --name migration | json_get key)"
MIG_SITE="$(post_created "$MAIL_URL/api/v1/sites" "$MIG_KEY" \
    '{"name":"Migration","slug":"migration","from_name":"Migration"}')"
MIG_CONNECTION="$(post_created "$MAIL_URL/api/v1/platforms/connections" "$MIG_KEY" \
    "{\"platform\":\"mailchimp\",\"credentials\":{\"api_key\":\"$MAILCHIMP_KEY\"}}")"
mg_reset=1
for pid in "$MAIL_PID" "$SEND_WORKER_PID"; do
    echo 5 >"/proc/$pid/clear_refs" 2>/dev/null || mg_reset=0
done
code="$(curl -sS -o "$WORK/resp" -w '%{http_code}' --max-time 10 -X POST \
    -H "Authorization: Bearer $MIG_KEY" -H 'Content-Type: application/json' \
    --data "{\"site_id\":\"$MIG_SITE\"}" "$MAIL_URL/api/v1/platforms/connections/$MIG_CONNECTION/migrations")" ||
    die "POST the migration failed"
[[ $code == 202 ]] || die "POST the migration answered $code, not 202: $(head -c 500 "$WORK/resp")"
MIG_RUN="$(json_get id <"$WORK/resp")"
start=$SECONDS
while :; do
    curl -fsS -o "$WORK/run.json" --max-time 10 -H "Authorization: Bearer $MIG_KEY" \
        "$MAIL_URL/api/v1/platforms/imports/$MIG_RUN" || die "GET the migration run failed"
    status="$(json_get status <"$WORK/run.json")"
    [[ $status == completed || $status == failed ]] && break
    ((SECONDS - start < 1800)) || die "the migration is still $status after $((SECONDS - start)) s"
    sleep 0.2
done
{
    python3 - "$WORK/run.json" "$MIGRATION_CONTACTS" <<'PY'
import datetime, json, sys
run = json.load(open(sys.argv[1]))
at = lambda k: datetime.datetime.fromisoformat(run[k].replace("Z", "+00:00"))
print(f"status={run['status']}")
print(f"error={run['error'] or ''}")
print(f"contacts_expected={sys.argv[2]}")
print(f"contacts={run['counts']['contacts']['imported']}")
print(f"suppressions={run['counts']['suppressions']['imported']}")
print(f"seconds={(at('finished_at') - at('created_at')).total_seconds():.3f}")
PY
    echo "api_peak_rss_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$MAIL_PID/status")"
    echo "worker_peak_rss_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$SEND_WORKER_PID/status")"
    echo "peak_reset=$mg_reset"
} >"$OUT/raw/mg-migration.txt"
sed 's/^/    /' "$OUT/raw/mg-migration.txt" | tr '\n' ' '
echo
[[ $status == completed ]] || die "scenario mg: the migration $status: $(head -c 500 "$WORK/run.json")"
printf '%s\tmigration\t%s\t%s\n' mg \
    "platform migration: $MIGRATION_CONTACTS Mailchimp contacts through mail-api and the send-worker" \
    "$OUT/raw/mg-migration.txt" >>"$SCENARIOS"
fi

# run_export ID NAME URL KEY [PID [ROWS [BODY_FILE]]]: one request streamed to /dev/null (a
# GET, or a POST of BODY_FILE); the time, the bytes, and the API process's (PID, default
# mail-api) peak resident set (VmHWM, reset before the request through /proc/PID/clear_refs
# where the kernel allows it; otherwise the peak since start). With SAVE_TO set, the
# response is kept in that file instead.
run_export() {
    local id=$1 name=$2 url=$3 key=$4 pid=${5:-$MAIL_PID} rows=${6:-$EXPORT_CONTACTS} body=${7:-}
    local out="$OUT/raw/$1-export.txt" reset=0 rc=0 res method=() sink=${SAVE_TO:-/dev/null}
    log "bench: $id  $name  (curl to /dev/null)"
    [[ -z $body ]] || method=(-X POST -H 'Content-Type: application/json' --data-binary "@$body")
    if echo 5 >"/proc/$pid/clear_refs" 2>/dev/null; then reset=1; fi
    local before
    before="$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")"
    res="$(curl -sS -o "$sink" -w '%{http_code} %{size_download} %{time_total} %{time_starttransfer}' \
        --max-time 1800 -H "Authorization: Bearer $key" "${method[@]}" "$url")" || rc=$?
    local code bytes total first
    read -r code bytes total first <<<"$res"
    {
        echo "code=$code"
        echo "curl_exit=$rc"
        echo "bytes=$bytes"
        echo "seconds=$total"
        echo "first_byte_seconds=$first"
        echo "rows=$rows"
        echo "rss_before_kb=$before"
        echo "peak_rss_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")"
        echo "peak_reset=$reset"
    } >"$out"
    sed 's/^/    /' "$out" | tr '\n' ' '
    echo
    ((rc == 0)) && [[ $code == 200 ]] ||
        die "scenario $id failed: HTTP $code, curl exit $rc"
    printf '%s\texport\t%s\t%s\n' "$id" "$name" "$out" >>"$SCENARIOS"
}

if mail_scenarios; then
# ------------------------------------------------------------------ mail export (p, q)
# A project of its own with EXPORT_CONTACTS contacts (time-ordered ids, each subscribed to
# the project's site), streamed by curl to /dev/null.
EXPORT_PROJECT="$(admin create-export-project --mail-db "$MAIL_DB_URL" mail create-project \
    --account "$ACCOUNT_ID" --name export --plan enterprise | json_get project_id)"
EXPORT_KEY="$(admin export-create-key --mail-db "$MAIL_DB_URL" mail create-key \
    --project "$EXPORT_PROJECT" --scope admin --name export | json_get key)"
EXPORT_SITE="$(post_created "$MAIL_URL/api/v1/sites" "$EXPORT_KEY" \
    '{"name":"Export","slug":"export","from_name":"Export"}')"
seed_start=$SECONDS
psql_pg -d bench_mail >/dev/null <<EOF
INSERT INTO contacts (id, project_id, email, first_name, last_name, properties, tags, source, created_at, updated_at)
SELECT (lpad(to_hex(1700000000000 + i), 12, '0') || '7' || lpad(to_hex(i), 19, '0'))::uuid,
       '$EXPORT_PROJECT', 'user' || i || '@export.example', 'First' || i, 'Last',
       jsonb_build_object('plan', 'pro', 'n', i), ARRAY['tag' || (i % 10)], 'identify', now(), now()
FROM generate_series(1, $EXPORT_CONTACTS) AS i;
INSERT INTO contact_sites (contact_id, site_id)
SELECT id, '$EXPORT_SITE' FROM contacts WHERE project_id = '$EXPORT_PROJECT';
ANALYZE contacts;
ANALYZE contact_sites;
EOF
log "bench: $EXPORT_CONTACTS contacts seeded for the export in $((SECONDS - seed_start)) s"
run_export p "mail-api GET /api/v1/export?format=json, $EXPORT_CONTACTS contacts" \
    "$MAIL_URL/api/v1/export?format=json" "$EXPORT_KEY"
run_export q "mail-api GET /api/v1/export?format=csv (ZIP), $EXPORT_CONTACTS contacts" \
    "$MAIL_URL/api/v1/export?format=csv" "$EXPORT_KEY"
fi
# The mail scenarios are over.
stop_service "$MAIL_PID" "${SEND_WORKER_PID:-}"

if memory_scenarios || search_scenarios || keyword_scenario; then
    # ------------------------------------------------------------- decisions and search
    # Latency of the search routes is measured with as many clients as the machine has
    # cores (BENCH_SEARCH_CONNECTIONS): with 32 the figure is mostly time spent queueing.
    SEED="$ROOT/scripts/bench/seed.py"
    SEARCH_CONNS="${BENCH_SEARCH_CONNECTIONS:-2}"
    copy_decisions() { # DB N USER
        python3 "$SEED" decisions "$2" "$3" bench-product | psql_pg -d "$1" -c \
            "\\copy decisions (id, user_id, environment, decision, reasoning, product_name, tags, decided_at) FROM STDIN WITH (FORMAT csv)"
        psql_pg -d "$1" -c "VACUUM ANALYZE decisions, decision_terms"
    }
fi
if keyword_scenario; then
    copy_decisions bench_memory "${BENCH_KEYWORD_DECISIONS:-100000}" "$USER_ID"
    log "bench: ${BENCH_KEYWORD_DECISIONS:-100000} decisions for the keyword scenario"
    python3 "$SEED" keyword-paths >"$WORK/keyword.paths"
    WRK_PATHS_FILE="$WORK/keyword.paths" CONNECTIONS="$SEARCH_CONNS" run_wrk i \
        "memory-api GET /memory/decisions/search, keyword, ${BENCH_KEYWORD_DECISIONS:-100000} decisions" \
        "$MEMORY_URL$(head -n 1 "$WORK/keyword.paths")" "$MEMORY_KEY"
fi
if memory_scenarios; then
    # MIF round trip (r, s): a user holding BENCH_MIF_ITEMS decisions and as many corpus
    # entries is exported (full), and the document imported with replace into an empty user.
    MIF_N="${BENCH_MIF_ITEMS:-10000}"
    mif_user() { # LOGNAME: a new user and its key, "USER KEY"
        local user key
        user="$(admin "$1-user" --memory-db "$MEMORY_DB_URL" memory create-user \
            --email "$1@example.com" --tier team | json_get user_id)"
        key="$(admin "$1-key" --memory-db "$MEMORY_DB_URL" memory create-key \
            --user "$user" --env live --scopes read,write --name bench | json_get key)"
        echo "$user $key"
    }
    read -r MIF_USER MIF_KEY <<<"$(mif_user mif-source)"
    read -r _ MIF_TARGET_KEY <<<"$(mif_user mif-target)"
    post_created "$MEMORY_URL/api/v1/products" "$MIF_KEY" '{"name":"bench-product"}' >/dev/null
    copy_decisions bench_memory "$MIF_N" "$MIF_USER"
    python3 "$SEED" corpus "$MIF_N" "$MIF_USER" | psql_pg -d bench_memory -c \
        "\\copy free_form_entries (id, user_id, environment, content, tags, source, created_at) FROM STDIN WITH (FORMAT csv)"
    SAVE_TO="$WORK/export.mif.json" run_export r \
        "memory-api GET /memory/export-mif?scope=full, $MIF_N decisions + $MIF_N corpus entries" \
        "$MEMORY_URL/api/v1/memory/export-mif?scope=full" "$MIF_KEY" "$MEMORY_PID" "$((2 * MIF_N))"
    python3 -c 'import json, sys
doc = json.load(open(sys.argv[1]))
json.dump({"mif": doc, "merge_strategy": "replace", "apply_immediately": True}, open(sys.argv[2], "w"))' \
        "$WORK/export.mif.json" "$WORK/import.json"
    run_export s "memory-api POST /memory/import-mif (replace, applied), the same document" \
        "$MEMORY_URL/api/v1/memory/import-mif" "$MIF_TARGET_KEY" "$MEMORY_PID" "$((2 * MIF_N))" \
        "$WORK/import.json"
fi
if memory_scenarios || search_scenarios; then
    # A second memory-api with the local model, on a database of its own: its
    # background pass embeds the seeded decisions before the scenarios start.
    SEMANTIC_ADDR=127.0.0.1:18082
    SEMANTIC_URL="http://$SEMANTIC_ADDR"
    SEMANTIC_DB_URL="$PG_BASE/bench_memory_semantic"
    psql_pg -d postgres -c "DROP DATABASE IF EXISTS bench_memory_semantic WITH (FORCE)" \
        -c "CREATE DATABASE bench_memory_semantic OWNER postgres" || die "could not recreate bench_memory_semantic"
    MEMORY_DATABASE__URL="$SEMANTIC_DB_URL" "$BIN/memory-api" migrate >"$OUT/logs/memory-semantic-migrate.log" 2>&1 ||
        die "memory-api migrate (semantic) failed"
    SEM_USER="$(admin sem-create-user --memory-db "$SEMANTIC_DB_URL" memory create-user \
        --email bench@example.com --tier team | json_get user_id)"
    SEM_KEY="$(admin sem-create-key --memory-db "$SEMANTIC_DB_URL" memory create-key \
        --user "$SEM_USER" --env live --scopes read,write --name bench | json_get key)"
    MODEL_DIR="$(bash "$ROOT/scripts/models.sh" --onnx "${BENCH_EMBED_MODEL:-all-mpnet-base-v2}" | tail -n 1)"
    ! tcp_open "${SEMANTIC_ADDR%:*}" "${SEMANTIC_ADDR##*:}" || die "$SEMANTIC_ADDR is already in use"
    semantic_env=()
    [[ -z ${BENCH_QUERY_CACHE_ENTRIES:-} ]] ||
        semantic_env=(MEMORY_EMBEDDINGS__QUERY_CACHE_ENTRIES="$BENCH_QUERY_CACHE_ENTRIES")
    case "${BENCH_EMBED_RUNTIME:-onnx}" in
    onnx) semantic_env+=(MEMORY_EMBEDDINGS__RUNTIME=onnx
        MEMORY_EMBEDDINGS__ONNXRUNTIME_LIBRARY="$(bash "$ROOT/scripts/models.sh" --onnxruntime | tail -n 1)") ;;
    candle) semantic_env+=(MEMORY_EMBEDDINGS__RUNTIME=candle) ;;
    *) die "BENCH_EMBED_RUNTIME must be onnx or candle" ;;
    esac
    [[ ${BENCH_EMBED_QUANTIZED:-1} != 1 || ${BENCH_EMBED_RUNTIME:-onnx} != onnx ]] ||
        semantic_env+=(MEMORY_EMBEDDINGS__QUANTIZED=true)
    log "bench: ${BENCH_EMBED_MODEL:-all-mpnet-base-v2} on ${BENCH_EMBED_RUNTIME:-onnx}$([[ ${BENCH_EMBED_QUANTIZED:-1} != 1 || ${BENCH_EMBED_RUNTIME:-onnx} != onnx ]] || echo ', int8 weights')"
    env "${svc_env[@]}" "${semantic_env[@]}" MEMORY_DATABASE__URL="$SEMANTIC_DB_URL" \
        MEMORY_HTTP__BIND="$SEMANTIC_ADDR" \
        MEMORY_EMBEDDINGS__PROVIDER=local MEMORY_EMBEDDINGS__MODEL_DIR="$MODEL_DIR" \
        "$BIN/memory-api" serve >"$OUT/logs/memory-api-semantic.log" 2>&1 </dev/null &
    PIDS+=($!)
    SEMANTIC_PID=$!
    wait_healthy memory-api-semantic "$SEMANTIC_PID" "$SEMANTIC_URL"
    post_created "$SEMANTIC_URL/api/v1/products" "$SEM_KEY" '{"name":"bench-product"}' >/dev/null
    SEMANTIC_N="${BENCH_SEMANTIC_DECISIONS:-10000}"
    copy_decisions bench_memory_semantic "$SEMANTIC_N" "$SEM_USER"
    embed_start=$SECONDS
    while :; do
        left="$(psql_pg -d bench_memory_semantic -c "SELECT count(*) FROM decisions WHERE embedding IS NULL")"
        ((left == 0)) && break
        ((SECONDS - embed_start < 1200)) || die "the background pass left $left decisions unembedded after 20 minutes"
        sleep 2
    done
    pass_seconds=$((SECONDS - embed_start))
    log "bench: $SEMANTIC_N decisions embedded by the background pass in $pass_seconds s"
    # What the model alone embeds on this machine, the same way and on the same texts (embed's
    # latency example, with the service's model, runtime and precision): the ceilings of the
    # pass (a sample of its decisions) and of l (the first of the bodies it posts).
    python3 "$SEED" decision-bodies "$SEMANTIC_N" | awk 'NR % 19 == 1' >"$WORK/pass.bodies"
    python3 "$SEED" post-bodies 5000 bench-product >"$WORK/post.bodies"
    ort_library=""
    [[ ${BENCH_EMBED_RUNTIME:-onnx} != onnx ]] ||
        ort_library="$(bash "$ROOT/scripts/models.sh" --onnxruntime | tail -n 1)"
    EMBED_MODEL_DIR="$MODEL_DIR" EMBED_ONNXRUNTIME_LIBRARY="$ort_library" \
        EMBED_QUANTIZED="$([[ ${BENCH_EMBED_QUANTIZED:-1} == 1 && ${BENCH_EMBED_RUNTIME:-onnx} == onnx ]] && echo 1 || echo 0)" \
        EMBED_PASS_DECISIONS="$WORK/pass.bodies" EMBED_POST_DECISIONS="$WORK/post.bodies" \
        "$BIN/examples/latency" >"$OUT/raw/model-alone.txt" 2>&1 ||
        { cat "$OUT/raw/model-alone.txt" >&2; die "embed's latency example failed"; }
    sed 's/^/    model alone: /' "$OUT/raw/model-alone.txt"
    model_rate() { # decisions a second the model alone embeds of $1's texts, $2 a call
        awk -v what="$1" -v per="$2 a call" 'index($0, what) && index($0, per) {
            for (i = 1; i <= NF; i++) if ($(i + 2) == "second") { print $i; exit } }' "$OUT/raw/model-alone.txt"
    }
    MODEL_ALONE_32="$(model_rate "the background pass's decisions" 32)"
    MODEL_ALONE_16="$(model_rate "the POSTed decisions" 16)"
    python3 -c 'import sys; n, s, m = map(float, sys.argv[1:]); r = n / max(s, 1)
print(f"bench: background pass {r:.1f} decisions/s, model alone {m:.0f}/s at 32 a call: ratio {r / m:.2f} (goal >= 0.7)")' \
        "$SEMANTIC_N" "$pass_seconds" "${MODEL_ALONE_32:-0}" | tee -a "$OUT/raw/model-alone.txt"
    psql_pg -d bench_memory_semantic -c "ANALYZE decisions"
    # The 20 questions repeat: after the warm-up every query vector comes from the cache
    # unless BENCH_QUERY_CACHE_ENTRIES=0.
    embedded="query vectors cached"
    [[ ${BENCH_QUERY_CACHE_ENTRIES:-} != 0 ]] || embedded="query embedded per request"
    python3 "$SEED" semantic-paths >"$WORK/semantic.paths"
    WRK_PATHS_FILE="$WORK/semantic.paths" CONNECTIONS="$SEARCH_CONNS" run_wrk j \
        "memory-api GET /memory/decisions/search, semantic ($embedded), $SEMANTIC_N decisions" \
        "$SEMANTIC_URL$(head -n 1 "$WORK/semantic.paths")" "$SEM_KEY"
    python3 "$SEED" memory-search-paths >"$WORK/memory-search.paths"
    WRK_PATHS_FILE="$WORK/memory-search.paths" CONNECTIONS="$SEARCH_CONNS" run_wrk k \
        "memory-api GET /memory/search, semantic ($embedded), $SEMANTIC_N decisions (exact scan, exact total)" \
        "$SEMANTIC_URL$(head -n 1 "$WORK/memory-search.paths")" "$SEM_KEY"
fi
if search_scenarios; then
    WRK_BODIES_FILE="$WORK/post.bodies" run_wrk l \
        "memory-api POST /memory/decisions, local embedding in the request" \
        "$SEMANTIC_URL/api/v1/memory/decisions" "$SEM_KEY"
    python3 -c 'import re, sys
text = open(sys.argv[1]).read()
v = dict(kv.split("=", 1) for kv in re.search(r"^WRK_RESULT (.*)$", text, re.M).group(1).split())
rps, m = int(v["requests"]) / (int(v["duration_us"]) / 1e6), float(sys.argv[2])
print(f"bench: l {rps:.1f} decisions/s, model alone {m:.0f}/s at 16 a call: ratio {rps / m:.2f} (goal >= 0.7)")' \
        "$OUT/raw/l-wrk.txt" "${MODEL_ALONE_16:-0}" | tee -a "$OUT/raw/model-alone.txt"
fi
stop_service "${SEMANTIC_PID:-}"
if memory_scenarios; then
    cp "$WORK/identity.sql" "$OUT/raw/h.sql"
    cp "$WORK/memory.sql" "$OUT/raw/e.sql"
fi

# ------------------------------------------------------------------- render a pdf (z)
# A producible pdf of BENCH_RENDER_PAGES pages (default 50) through the whole path: POST the
# tree to memory-api, the release render-worker renders it off RabbitMQ into the object store,
# the status is polled every 20 ms and the file downloaded. seconds: POST to downloadable;
# first_byte_seconds: POST to the worker taking it; peak_rss_kb: the worker's (VmHWM).
if render_scenarios; then
    RENDER_PAGES="${BENCH_RENDER_PAGES:-50}"
    env "${svc_env[@]}" MEMORY_DATABASE__URL="$MEMORY_DB_URL" MEMORY_WORKER__BIND=127.0.0.1:19092 \
        "$BIN/render-worker" >"$OUT/logs/render-worker.log" 2>&1 </dev/null &
    PIDS+=($!)
    RENDER_PID=$!
    wait_healthy render-worker "$RENDER_PID" http://127.0.0.1:19092
    out="$OUT/raw/pdf-export.txt"
    name="render-worker: producible pdf of $RENDER_PAGES pages (POST, render, poll, download)"
    log "bench: pdf  $name"
    before="$(awk '/^VmRSS:/ {print $2}' "/proc/$RENDER_PID/status")"
    res="$(python3 "$ROOT/scripts/bench/render-pdf.py" "$MEMORY_URL" "$MEMORY_KEY" "$RENDER_PAGES" \
        "$WORK/bench.pdf")" || die "scenario pdf failed"
    read -r code bytes total taken <<<"$res"
    pages="$(pdfinfo "$WORK/bench.pdf" 2>/dev/null | awk '/^Pages:/ {print $2}')"
    {
        echo "code=$code"
        echo "curl_exit=0"
        echo "bytes=$bytes"
        echo "seconds=$total"
        echo "first_byte_seconds=$taken"
        echo "rows=${pages:-0}"
        echo "rss_before_kb=$before"
        echo "peak_rss_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$RENDER_PID/status")"
        echo "peak_reset=0"
    } >"$out"
    sed 's/^/    /' "$out" | tr '\n' ' '
    echo
    [[ $code == 200 && ${pages:-0} == "$RENDER_PAGES" ]] ||
        die "scenario pdf failed: HTTP $code, $pages pages"
    printf '%s\texport\t%s\t%s\n' pdf "$name" "$out" >>"$SCENARIOS"

    # A marketing video of BENCH_VIDEO_SECONDS (15) at 1080x1920 through the same worker,
    # silent (video-silent: brand.narration false) then narrated and captioned (video): the
    # POST waits for the render (or is polled after a 202), the MP4 is downloaded and checked
    # by ffprobe. peak_rss_kb: the worker's own peak during this render (reset before it);
    # ffmpeg_peak_kb: its encoder child's. The narrated render's time over the silent one's is
    # printed (the target: at most 2).
    VIDEO_SECONDS="${BENCH_VIDEO_SECONDS:-15}"
    video_scenario() { # SCENARIO TITLE [silent]
        local scenario=$1 title=$2 mode=${3:-}
        out="$OUT/raw/$scenario-export.txt"
        name="render-worker: marketing video, $title, $VIDEO_SECONDS s at 1080x1920 (POST, render, download)"
        log "bench: $scenario  $name"
        echo 5 >"/proc/$RENDER_PID/clear_refs" 2>/dev/null || true
        before="$(awk '/^VmRSS:/ {print $2}' "/proc/$RENDER_PID/status")"
        res="$(python3 "$ROOT/scripts/bench/render-video.py" "$MEMORY_URL" "$MEMORY_KEY" "$VIDEO_SECONDS" \
            "$RENDER_PID" "$WORK/bench.mp4" $mode)" || die "scenario $scenario failed"
        read -r code bytes total cost ffmpeg_peak <<<"$res"
        probed="$(ffprobe -v error -select_streams v:0 -show_entries stream=codec_name,width,height \
            -show_entries format=duration -of csv=p=0 "$WORK/bench.mp4" | tr '\n' ',')"
        {
            echo "code=$code"
            echo "curl_exit=0"
            echo "bytes=$bytes"
            echo "seconds=$total"
            echo "first_byte_seconds=$total"
            echo "rows=$VIDEO_SECONDS"
            echo "rss_before_kb=$before"
            echo "peak_rss_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$RENDER_PID/status")"
            echo "peak_reset=1"
            echo "ffmpeg_peak_kb=$ffmpeg_peak"
            echo "cost_cents=$cost"
            echo "ffprobe=$probed"
        } >"$out"
        sed 's/^/    /' "$out" | tr '\n' ' '
        echo
        [[ $code == 200 && $probed == h264,1080,1920,* ]] ||
            die "scenario $scenario failed: HTTP $code, ffprobe $probed"
        printf '%s\texport\t%s\t%s\n' "$scenario" "$name" "$out" >>"$SCENARIOS"
        VIDEO_TIME=$total
    }
    video_scenario video-silent "silent" silent
    silent_time=$VIDEO_TIME
    video_scenario video "narrated and captioned"
    log "bench: video narrated/silent time ratio $(awk -v n="$VIDEO_TIME" -v s="$silent_time" \
        'BEGIN { printf "%.2f (%.2f s / %.2f s; target <= 2)", n / s, n, s }')"
    stop_service "$RENDER_PID"
fi

if mail_scenarios; then
    cp "$WORK/mail.sql" "$OUT/raw/f.sql"
    cp "$WORK/identify.sql" "$OUT/raw/n.sql"
fi

# ------------------------------------------------------------ producer signals (v, w)
# v: POST /signals/ingest with 50 signals per request, each body made by wrk-report.lua
# (WRK_SIGNALS), every dedup_key new (an insert each, as in w). w: pgbench running the
# route's statement on the same table: the same multi-row INSERT ... ON CONFLICT
# (services/memory-api/src/db/sql/signals/upsert.sql, one statement in its own transaction,
# reading the credential's active workspace as the route does) of 50 rows; its arrays are built
# with the values wrk sends (payload and evidence as JSON text cast to jsonb per row, as the
# route sends them), and its ids are time-ordered like the route's UUID v7.
if signal_scenarios; then
    SIGNAL_CONNS="${BENCH_SIGNAL_CONNECTIONS:-32}"
    SIGNALS_PER_REQUEST=50
    SIGNAL_JSON='{"source":"api","entity_scope":"product","entity_id":"bench-product","signal_type":"latency_spike","dedup_key":"%s","severity":"warning","title":"p99 latency above budget","description":"p99 latency rose after the deploy","payload":{"triggered_at":"2026-11-26T10:00:00Z","metric_key":"p99_ms","baseline_value":120,"current_value":480.5,"delta_percent":300.4,"metadata":{"region":"eu"}},"evidence":[{"trace":"t-1"}],"confidence_score":0.8,"collapse_window_minutes":60}'
    # The probe request of run_wrk (wrk then makes its own bodies).
    python3 -c 'import json, sys
tmpl, n = sys.argv[1], int(sys.argv[2])
print(json.dumps({"signals": [json.loads(tmpl.replace("%s", "probe-%d" % i)) for i in range(n)]}))' \
        "$SIGNAL_JSON" "$SIGNALS_PER_REQUEST" >"$WORK/signals.first"
    WRK_SIGNALS="$SIGNALS_PER_REQUEST" WRK_SIGNAL_JSON="$SIGNAL_JSON" WRK_BODIES_FILE="$WORK/signals.first" \
        ROWS_PER_REQUEST="$SIGNALS_PER_REQUEST" CONNECTIONS="$SIGNAL_CONNS" run_wrk v \
        "memory-api POST /api/v1/signals/ingest, $SIGNALS_PER_REQUEST signals per request (new dedup keys)" \
        "$MEMORY_URL/api/v1/signals/ingest" "$MEMORY_KEY"
    written="$(psql_pg -d bench_memory -c "SELECT count(*), max(count) FROM producer_signals WHERE dedup_key LIKE 'wrk-%'")"
    log "bench: producer signals written by v, warm-up included (rows|largest count): $written"
    N=$SIGNALS_PER_REQUEST
    cat >"$WORK/signals.sql" <<EOF
\\set base random(1, 1000000000000)
INSERT INTO producer_signals AS s (id, user_id, environment, workspace_id, source, entity_scope, entity_id, signal_type, dedup_key, severity, title, description, payload, evidence, related_decisions, confidence_score, collapse_window_minutes, count) SELECT r.id, '$USER_ID', 'live', coalesce(NULL::uuid, (SELECT w.active_workspace_id FROM workspace_scopes w WHERE w.key_id = '$MEMORY_KEY_ID')), r.source, r.entity_scope, r.entity_id, r.signal_type, r.dedup_key, r.severity, r.title, r.description, r.payload::jsonb, r.evidence::jsonb, r.related::uuid[], r.confidence, r.win, r.n FROM unnest(ARRAY(SELECT (lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') || '7' || lpad(to_hex(g), 3, '0') || substr(md5(:base::text || :client_id::text), 1, 16))::uuid FROM generate_series(1, $N) g), array_fill('api'::text, ARRAY[$N]), array_fill('product'::text, ARRAY[$N]), array_fill('bench-product'::text, ARRAY[$N]), array_fill('latency_spike'::text, ARRAY[$N]), ARRAY(SELECT 'pg-' || :client_id || '-' || :base || '-' || g FROM generate_series(1, $N) g), array_fill('warning'::text, ARRAY[$N]), array_fill('p99 latency above budget'::text, ARRAY[$N]), array_fill('p99 latency rose after the deploy'::text, ARRAY[$N]), array_fill('{"triggered_at": "2026-11-26T10:00:00Z", "metric_key": "p99_ms", "baseline_value": 120.0, "current_value": 480.5, "delta_percent": 300.4, "source_url": null, "metadata": {"region": "eu"}}'::text, ARRAY[$N]), array_fill('[{"trace": "t-1"}]'::text, ARRAY[$N]), array_fill('{}'::text, ARRAY[$N]), array_fill(0.8::float8, ARRAY[$N]), array_fill(60, ARRAY[$N]), array_fill(1, ARRAY[$N])) WITH ORDINALITY AS r(id, source, entity_scope, entity_id, signal_type, dedup_key, severity, title, description, payload, evidence, related, confidence, win, n, ord) ORDER BY r.ord ON CONFLICT (user_id, environment, dedup_key) WHERE open DO UPDATE SET count = s.count + excluded.count, last_seen_at = excluded.last_seen_at WHERE s.last_seen_at >= excluded.last_seen_at - make_interval(mins => excluded.collapse_window_minutes) RETURNING s.id, s.dedup_key;
\\set bench_clock 0
EOF
    # It must run and write N rows, or the comparison means nothing.
    rows="$(sed -n 2p "$WORK/signals.sql" | sed 's/:base/0/g; s/:client_id/0/g' | psql_pg -d bench_memory 2>&1)" ||
        die "the signals route's SQL no longer matches the schema; update scripts/bench.sh: $rows"
    [[ $(grep -c . <<<"$rows") -eq $N ]] ||
        die "the signals route's SQL answered $(grep -c . <<<"$rows") rows, not $N: $(head -c 500 <<<"$rows")"
    # The route reaches the database through memory-api's pool (16 connections, the default
    # of crates/store): that is the concurrency the statement runs at, so w uses as many
    # clients. (32 clients beside the services' pools exceeded the server's 100 connections:
    # "pgbench warm-up failed in scenario w".)
    ROWS_PER_REQUEST="$N" CONNECTIONS="${BENCH_SIGNAL_DB_CONNECTIONS:-16}" run_pgbench w \
        "pgbench bench_memory: the transaction of v ($N-row INSERT ... ON CONFLICT)" \
        bench_memory "$WORK/signals.sql"
    cp "$WORK/signals.sql" "$OUT/raw/w.sql"
fi

# ------------------------------------------------------------- retrieval quality (z)
! memory_scenarios || bash "$ROOT/scripts/bench/retrieval.sh" "$BIN" "$OUT"

# -------------------------------------------------------------------------- report
REPORTED=1
python3 "$ROOT/scripts/bench/report.py" "$SCENARIOS" "$OUT/results.json"
if memory_scenarios; then
    python3 "$ROOT/scripts/bench/retrieval_eval.py" table "$OUT/retrieval.jsonl" "$OUT/results.json"
fi

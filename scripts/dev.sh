#!/usr/bin/env bash
# Run by `make dev` after the servers are up and the binaries built: migrate both databases,
# bootstrap a development user and project once, give the project a site (it sends as
# dev@<the dev sending domain>, through the file provider into .dev/mail-outbox), keep what
# the quickstart needs in .dev/keys.env (git ignores it), print it, and run the four binaries
# until Ctrl-C. Every step is idempotent: a second run reuses the keys and the site.
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug"
DEV="$ROOT/.dev"
KEYS="$DEV/keys.env"
mkdir -p "$DEV"

export MEMORY_DATABASE__URL="${MEMORY_DATABASE__URL:-postgres://postgres@127.0.0.1:5432/memory}"
export MAIL_DATABASE__URL="${MAIL_DATABASE__URL:-postgres://postgres@127.0.0.1:5432/mail}"
export MEMORY_TELEMETRY__LOG_FORMAT="${MEMORY_TELEMETRY__LOG_FORMAT:-pretty}"
# The key that seals third-party secrets: made once for this checkout, kept with the keys.
if [[ -z ${MEMORY_SECRETS__KEK:-} ]]; then
    [[ -s "$DEV/kek" ]] || (umask 077 && head -c 32 /dev/urandom | base64 >"$DEV/kek")
    MEMORY_SECRETS__KEK="$(cat "$DEV/kek")"
    export MEMORY_SECRETS__KEK
fi
export MAIL_TELEMETRY__LOG_FORMAT="${MAIL_TELEMETRY__LOG_FORMAT:-pretty}"
# mail-api and send-worker: the same key (provider credentials, webhook secrets), the link
# signing secret, and the file provider: sent mail lands as .eml files in .dev/mail-outbox.
[[ -s "$DEV/kek" ]] || (umask 077 && head -c 32 /dev/urandom | base64 >"$DEV/kek")
export MAIL_SECRETS__KEK="${MAIL_SECRETS__KEK:-$(cat "$DEV/kek")}"
if [[ -z ${MAIL_TRACKING__SECRET:-} ]]; then
    [[ -s "$DEV/tracking" ]] || (umask 077 && head -c 32 /dev/urandom | base64 >"$DEV/tracking")
    MAIL_TRACKING__SECRET="$(cat "$DEV/tracking")"
    export MAIL_TRACKING__SECRET
fi
export MAIL_TRACKING__BASE_URL="${MAIL_TRACKING__BASE_URL:-http://127.0.0.1:8081}"
export MAIL_DELIVERY__DEFAULT_PROVIDER__KIND="${MAIL_DELIVERY__DEFAULT_PROVIDER__KIND:-file}"
export MAIL_DELIVERY__DEFAULT_PROVIDER__DIRECTORY="${MAIL_DELIVERY__DEFAULT_PROVIDER__DIRECTORY:-$DEV/mail-outbox}"
# Semantic search with the local model, all-mpnet-base-v2 with int8 weights, whose weights the
# project fetches itself, run by ONNX Runtime (the PyPI wheel's library). DEV_EMBED_MODEL=
# all-MiniLM-L6-v2 picks the small model (MEMORY_EMBEDDINGS__QUANTIZED=false: full precision).
if [[ -z ${MEMORY_EMBEDDINGS__PROVIDER:-} ]]; then
    export MEMORY_EMBEDDINGS__PROVIDER=local
    export MEMORY_EMBEDDINGS__QUANTIZED="${MEMORY_EMBEDDINGS__QUANTIZED:-true}"
    MEMORY_EMBEDDINGS__MODEL_DIR="$("$ROOT/scripts/models.sh" --onnx "${DEV_EMBED_MODEL:-all-mpnet-base-v2}" | tail -n 1)"
    MEMORY_EMBEDDINGS__ONNXRUNTIME_LIBRARY="$("$ROOT/scripts/models.sh" --onnxruntime | tail -n 1)"
    export MEMORY_EMBEDDINGS__MODEL_DIR MEMORY_EMBEDDINGS__ONNXRUNTIME_LIBRARY
    # A database made with the previous default, all-MiniLM-L6-v2 at full precision, upgrades
    # smoothly: search answers on its vectors while the background pass re-embeds every row.
    if [[ ${DEV_EMBED_MODEL:-all-mpnet-base-v2} != all-MiniLM-L6-v2 \
        && -z ${MEMORY_PREVIOUS_EMBEDDINGS__PROVIDER:-} ]]; then
        export MEMORY_PREVIOUS_EMBEDDINGS__PROVIDER=local
        export MEMORY_PREVIOUS_EMBEDDINGS__QUANTIZED=false
        MEMORY_PREVIOUS_EMBEDDINGS__MODEL_DIR="$("$ROOT/scripts/models.sh" --onnx all-MiniLM-L6-v2 | tail -n 1)"
        MEMORY_PREVIOUS_EMBEDDINGS__ONNXRUNTIME_LIBRARY="$MEMORY_EMBEDDINGS__ONNXRUNTIME_LIBRARY"
        export MEMORY_PREVIOUS_EMBEDDINGS__MODEL_DIR MEMORY_PREVIOUS_EMBEDDINGS__ONNXRUNTIME_LIBRARY
    fi
fi

"$BIN/memory-api" migrate
"$BIN/mail-api" migrate

field() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

# A saved key still answers 200 when the bootstrap was done before on this database.
key_works() {
    [[ -n "${2:-}" ]] && [[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $2" "$1")" == 200 ]]
}

bootstrap() {
    local user project account
    user=$("$BIN/admin" memory create-user --email "dev-$(date +%s)@example.com" --tier pro | field user_id)
    MEMORY_LIVE_KEY=$("$BIN/admin" memory create-key --user "$user" --name dev --env live --scopes read,write | field key)
    MEMORY_TEST_KEY=$("$BIN/admin" memory create-key --user "$user" --name dev --env test --scopes read,write | field key)
    account=$("$BIN/admin" mail create-account --name dev | field account_id)
    project=$("$BIN/admin" mail create-project --account "$account" --name dev --plan managed | field project_id)
    MAIL_KEY=$("$BIN/admin" mail create-key --project "$project" --name dev --scope admin | field key)
    MEMORY_USER_ID=$user
    MAIL_PROJECT_ID=$project
    MAIL_SITE_ID=
}

# The project's site: the saved one while it still exists, else its first site, else a new
# one (slug `dev`, or `dev-<random>` when another project of this database took `dev`).
ensure_site() {
    local sites slug answer
    sites=$(curl -sf -H "Authorization: Bearer $MAIL_KEY" "$MAIL_URL/api/v1/sites?limit=100") ||
        die "GET /api/v1/sites failed"
    read -r MAIL_SITE_ID MAIL_FROM < <(python3 -c '
import json, sys
sites = json.load(sys.stdin)["data"]
pick = [s for s in sites if s["id"] == sys.argv[1]] or sites
print(pick[0]["id"], pick[0]["from_email"]) if pick else print("- -")' "${MAIL_SITE_ID:-}" <<<"$sites")
    [[ $MAIL_SITE_ID != - ]] && return
    for slug in dev "dev-$(head -c 3 /dev/urandom | od -An -tx1 | tr -d ' \n')"; do
        answer=$(curl -s -w '\n%{http_code}' -H "Authorization: Bearer $MAIL_KEY" \
            -H 'Content-Type: application/json' \
            --data "{\"name\":\"Dev site\",\"slug\":\"$slug\",\"from_name\":\"Dev\"}" \
            "$MAIL_URL/api/v1/sites")
        case "${answer##*$'\n'}" in
        201)
            MAIL_SITE_ID=$(field id <<<"${answer%$'\n'*}")
            MAIL_FROM=$(field from_email <<<"${answer%$'\n'*}")
            return
            ;;
        409) continue ;;
        *) die "POST /api/v1/sites answered ${answer##*$'\n'}: ${answer%$'\n'*}" ;;
        esac
    done
    die "no free site slug"
}

save_keys() {
    (
        umask 077
        cat >"$KEYS" <<KEYS
# Written by scripts/dev.sh (make dev); read by scripts/quickstart.sh.
MEMORY_URL=$MEMORY_URL
MAIL_URL=$MAIL_URL
MEMORY_USER_ID=$MEMORY_USER_ID
MEMORY_LIVE_KEY=$MEMORY_LIVE_KEY
MEMORY_TEST_KEY=$MEMORY_TEST_KEY
MAIL_PROJECT_ID=$MAIL_PROJECT_ID
MAIL_KEY=$MAIL_KEY
MAIL_SITE_ID=$MAIL_SITE_ID
MAIL_FROM=$MAIL_FROM
MAIL_OUTBOX=$MAIL_DELIVERY__DEFAULT_PROVIDER__DIRECTORY
KEYS
    )
}

pids=()
stop() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait || true
}
trap stop EXIT INT TERM

"$BIN/memory-api" serve & pids+=($!)
"$BIN/mail-api" serve & pids+=($!)
"$BIN/send-worker" & pids+=($!)
"$BIN/render-worker" & pids+=($!)

for url in http://127.0.0.1:8080/readyz http://127.0.0.1:8081/readyz http://127.0.0.1:9091/readyz http://127.0.0.1:9092/readyz; do
    for _ in $(seq 1 100); do
        curl -sf -o /dev/null "$url" && break
        sleep 0.1
    done
done

# shellcheck disable=SC1090
[[ -f "$KEYS" ]] && . "$KEYS"
# The addresses of this run (a saved file may name others).
MEMORY_URL=http://127.0.0.1:8080
MAIL_URL=http://127.0.0.1:8081
if ! key_works "$MEMORY_URL/api/v1/products" "${MEMORY_LIVE_KEY:-}" ||
    ! key_works "$MAIL_URL/api/v1/sites" "${MAIL_KEY:-}"; then
    bootstrap
fi
ensure_site
save_keys

cat <<INFO

memory-api     $MEMORY_URL   (a browser: the landing page and /docs, the API reference)
mail-api       $MAIL_URL   (the same)
send-worker    http://127.0.0.1:9091/readyz
render-worker  http://127.0.0.1:9092/readyz

memory live key: $MEMORY_LIVE_KEY
memory test key: $MEMORY_TEST_KEY
mail key (admin): $MAIL_KEY
mail site: $MAIL_SITE_ID (sends as $MAIL_FROM; sent mail lands in .dev/mail-outbox)
(kept in .dev/keys.env)

First steps (the README's Quickstart): in another terminal,

  make quickstart

sends a first email and shows the file it landed in, records a decision and finds it by
meaning. Or one call at a time:

  . .dev/keys.env
  curl -H "Authorization: Bearer \$MAIL_KEY" -H 'Content-Type: application/json' \\
    -d '{"to":"you@example.com","site_id":"'\$MAIL_SITE_ID'","subject":"Hello","html":"<p>Hi</p>"}' \\
    \$MAIL_URL/api/v1/send

Ctrl-C stops everything.
INFO
wait

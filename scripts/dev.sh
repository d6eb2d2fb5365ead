#!/usr/bin/env bash
# Run by `make dev` after the servers are up and the binaries built: migrate both databases,
# bootstrap a development user and project once (their keys are kept in .dev/keys.env, which
# git ignores), print the keys, and run the four binaries until Ctrl-C.
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
# Semantic search with the local model, whose weights the project fetches itself, run by
# ONNX Runtime (the PyPI wheel's library).
if [[ -z ${MEMORY_EMBEDDINGS__PROVIDER:-} ]]; then
    export MEMORY_EMBEDDINGS__PROVIDER=local
    MEMORY_EMBEDDINGS__MODEL_DIR="$("$ROOT/scripts/models.sh" --onnx | tail -n 1)"
    MEMORY_EMBEDDINGS__ONNXRUNTIME_LIBRARY="$("$ROOT/scripts/models.sh" --onnxruntime | tail -n 1)"
    export MEMORY_EMBEDDINGS__MODEL_DIR MEMORY_EMBEDDINGS__ONNXRUNTIME_LIBRARY
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
    umask 077
    cat >"$KEYS" <<KEYS
MEMORY_USER_ID=$user
MEMORY_LIVE_KEY=$MEMORY_LIVE_KEY
MEMORY_TEST_KEY=$MEMORY_TEST_KEY
MAIL_PROJECT_ID=$project
MAIL_KEY=$MAIL_KEY
KEYS
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
if ! key_works http://127.0.0.1:8080/api/v1/products "${MEMORY_LIVE_KEY:-}" ||
    ! key_works http://127.0.0.1:8081/api/v1/sites "${MAIL_KEY:-}"; then
    bootstrap
fi

cat <<INFO

memory-api     http://127.0.0.1:8080   (OpenAPI: /api/v1/openapi.json)
mail-api       http://127.0.0.1:8081   (OpenAPI: /api/v1/openapi.json)
send-worker    http://127.0.0.1:9091/readyz
render-worker  http://127.0.0.1:9092/readyz

memory live key: $MEMORY_LIVE_KEY
memory test key: $MEMORY_TEST_KEY
mail key (admin): $MAIL_KEY
(kept in .dev/keys.env)

  curl -H "Authorization: Bearer $MEMORY_LIVE_KEY" http://127.0.0.1:8080/api/v1/products
  curl -H "Authorization: Bearer $MAIL_KEY" http://127.0.0.1:8081/api/v1/sites

Ctrl-C stops everything.
INFO
wait

#!/usr/bin/env bash
# Retrieval quality on the hard set (tests/fixtures/retrieval-hard), called by scripts/bench.sh
# (scenario z of `make bench`) or alone:
#
#   scripts/bench/retrieval.sh BIN_DIR OUT_DIR
#
# For every configuration below: a scratch database bench_retrieval, a memory-api (release
# binary from BIN_DIR) on 127.0.0.1:18083 with that configuration's settings, a tenant made
# with the admin CLI, the 200 decisions posted through the API (embedded in the request), then
# every question asked of /memory/decisions/search and /memory/search. Beside each model, plain
# cosine of the same model (BIN_DIR/examples/hard_set). Prints the table and writes the rows
# to OUT_DIR/retrieval.jsonl.
#
# Configurations: keyword only (no provider); each local model of scripts/models.sh with the
# service's default ranking, beside plain cosine of that model (all-mpnet-base-v2 at full
# precision and with int8 weights); unless BENCH_RETRIEVAL_ABLATIONS=0, all-mpnet-base-v2 int8
# and all-MiniLM-L6-v2 with each ranking setting changed alone (no decision lead, i.e.
# MEMORY_SEARCH__LEAD_WEIGHT=0; keyword weight 0 and 1; for MiniLM also RRF k 10, ONNX Runtime
# and int8) and plain cosine with pseudo-relevance feedback; with
# BENCH_LLM_URL, BENCH_LLM_MODEL and BENCH_LLM_KEY (an OpenAI-compatible chat endpoint and a
# key for it), the LLM query rewrite (MEMORY_SEARCH__LLM_REWRITE); and BENCH_RETRIEVAL_EXTRA,
# ';'-separated "label|ENV=v ENV=v" (memory-api settings) to measure more, e.g.
#   BENCH_RETRIEVAL_EXTRA='minilm rrf k=10|MEMORY_SEARCH__RRF_K=10'
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../lib.sh
source "$ROOT/scripts/lib.sh"

BIN="$(cd "${1:?BIN_DIR}" && pwd)"
OUT="$(mkdir -p "${2:?OUT_DIR}" && cd "$2" && pwd)"
ADDR=127.0.0.1:18083
URL="http://$ADDR"
DB=bench_retrieval
DB_URL="postgres://postgres@127.0.0.1:5432/$DB"
ROWS="$OUT/retrieval.jsonl"
EVAL="$ROOT/scripts/bench/retrieval_eval.py"
mkdir -p "$OUT/logs"
: >"$ROWS"

python3 "$ROOT/scripts/bench/hard_set.py" || die "the hard set does not pass its checks"
[[ -x $BIN/memory-api && -x $BIN/admin ]] || die "no $BIN/memory-api or $BIN/admin"

psql_pg() {
    env -u PGPASSWORD PGPASSFILE=/dev/null/none PGOPTIONS='-c client_min_messages=warning' \
        psql -X -w -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p 5432 -U postgres "$@"
}

SERVER_PID=""
stop_server() {
    [[ -n $SERVER_PID ]] || return 0
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}
trap stop_server EXIT

# measure LABEL ENV=VALUE...: one memory-api with those settings, loaded and questioned.
measure() {
    local label=$1 log user key
    shift
    log="$OUT/logs/retrieval-$(tr -c 'a-zA-Z0-9\n' '-' <<<"$label").log"
    psql_pg -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" ||
        die "could not recreate $DB"
    MEMORY_DATABASE__URL="$DB_URL" "$BIN/memory-api" migrate >"$log" 2>&1 || die "migrate failed: $log"
    user="$("$BIN/admin" --memory-db "$DB_URL" memory create-user --email eval@example.com --tier team 2>>"$log" |
        python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["user_id"])')" ||
        die "create-user failed: $log"
    key="$("$BIN/admin" --memory-db "$DB_URL" memory create-key --user "$user" --env live --scopes read,write --name eval 2>>"$log" |
        python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["key"])')" ||
        die "create-key failed: $log"
    ! tcp_open "${ADDR%:*}" "${ADDR##*:}" || die "$ADDR is already in use"
    env MEMORY_DATABASE__URL="$DB_URL" MEMORY_HTTP__BIND="$ADDR" MEMORY_RATE_LIMIT__SCALE=1000000 \
        MEMORY_SECRETS__KEK="$(head -c 32 /dev/urandom | base64)" RUST_LOG=warn "$@" \
        "$BIN/memory-api" serve >>"$log" 2>&1 </dev/null &
    SERVER_PID=$!
    for _ in $(seq 1 240); do
        curl -fsS -o /dev/null --max-time 2 "$URL/healthz" 2>/dev/null && break
        kill -0 "$SERVER_PID" 2>/dev/null || die "memory-api exited: $log"
        sleep 0.5
    done
    (cd "$ROOT/scripts/bench" && python3 "$EVAL" load "$URL" "$key") >"$OUT/retrieval-ids.json" ||
        die "loading the hard set failed ($label)"
    (cd "$ROOT/scripts/bench" && python3 "$EVAL" query "$URL" "$key" "$label" "$OUT/retrieval-ids.json") >>"$ROWS" ||
        die "questioning failed ($label)"
    stop_server
}

# cosine LABEL MODEL_DIR ENV=VALUE...: plain cosine of that model, no service.
cosine() {
    local label=$1 dir=$2
    shift 2
    [[ -x $BIN/examples/hard_set ]] || { warn "no $BIN/examples/hard_set: cosine row skipped"; return 0; }
    env EMBED_MODEL_DIR="$dir" "$@" "$BIN/examples/hard_set" "$ROOT/tests/fixtures/retrieval-hard" |
        python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); r["provider"]=sys.argv[1]; print(json.dumps(r))' \
            "$label" >>"$ROWS"
}

export CACHE_DIR="${CACHE_DIR:-$HOME/.cache/memmail}"

measure "keyword (no provider)" MEMORY_EMBEDDINGS__PROVIDER=none

ort_lib="$(bash "$ROOT/scripts/models.sh" --onnxruntime | tail -n 1)"

# The models scripts/models.sh installs: "name|dir|pooling|query prefix|passage prefix" lines.
# An MPNet model runs on ONNX Runtime only: full precision and int8 weights, each beside its
# plain cosine; the others on candle.
while IFS="|" read -r -u 3 name dir pooling qprefix pprefix; do
    [[ -n $name ]] || continue
    settings=(MEMORY_EMBEDDINGS__PROVIDER=local MEMORY_EMBEDDINGS__MODEL_DIR="$dir" MEMORY_EMBEDDINGS__MODEL="$name")
    [[ -z $pooling ]] || settings+=(MEMORY_EMBEDDINGS__POOLING="$pooling")
    [[ -z $qprefix ]] || settings+=(MEMORY_EMBEDDINGS__QUERY_PREFIX="$qprefix")
    [[ -z $pprefix ]] || settings+=(MEMORY_EMBEDDINGS__PASSAGE_PREFIX="$pprefix")
    cosine_env=(EMBED_MODEL="$name" EMBED_POOLING="$pooling" EMBED_QUERY_PREFIX="$qprefix" EMBED_PASSAGE_PREFIX="$pprefix")
    if grep -q '"model_type": *"mpnet"' "$dir/config.json"; then
        bash "$ROOT/scripts/models.sh" --onnx "$name" >/dev/null
        settings+=(MEMORY_EMBEDDINGS__ONNXRUNTIME_LIBRARY="$ort_lib")
        cosine_env+=(EMBED_ONNXRUNTIME_LIBRARY="$ort_lib")
        cosine "local/$name" "$dir" "${cosine_env[@]}"
        measure "local/$name" "${settings[@]}"
        cosine "local/$name int8" "$dir" "${cosine_env[@]}" EMBED_QUANTIZED=1
        measure "local/$name int8" "${settings[@]}" MEMORY_EMBEDDINGS__QUANTIZED=true
        continue
    fi
    cosine "local/$name" "$dir" "${cosine_env[@]}"
    measure "local/$name" "${settings[@]}"
done 3< <(bash "$ROOT/scripts/models.sh" --list)

if [[ ${BENCH_RETRIEVAL_ABLATIONS:-1} == 1 ]]; then
# Each ranking setting changed alone, on the services' default (all-mpnet-base-v2, int8).
mpnet_dir="$(bash "$ROOT/scripts/models.sh" --onnx all-mpnet-base-v2 | tail -n 1)"
mpnet=(MEMORY_EMBEDDINGS__PROVIDER=local MEMORY_EMBEDDINGS__MODEL_DIR="$mpnet_dir"
    MEMORY_EMBEDDINGS__ONNXRUNTIME_LIBRARY="$ort_lib" MEMORY_EMBEDDINGS__QUANTIZED=true)
measure "mpnet int8, no decision lead" "${mpnet[@]}" MEMORY_SEARCH__LEAD_WEIGHT=0
measure "mpnet int8, keyword weight 0" "${mpnet[@]}" MEMORY_SEARCH__KEYWORD_WEIGHT=0
measure "mpnet int8, keyword weight 1" "${mpnet[@]}" MEMORY_SEARCH__KEYWORD_WEIGHT=1
# The same on the small model.
default_dir="$(bash "$ROOT/scripts/models.sh")"
default=(MEMORY_EMBEDDINGS__PROVIDER=local MEMORY_EMBEDDINGS__MODEL_DIR="$default_dir")
measure "minilm, no decision lead" "${default[@]}" MEMORY_SEARCH__LEAD_WEIGHT=0
measure "minilm, keyword weight 0" "${default[@]}" MEMORY_SEARCH__KEYWORD_WEIGHT=0
measure "minilm, keyword weight 1" "${default[@]}" MEMORY_SEARCH__KEYWORD_WEIGHT=1
measure "minilm, rrf k 10" "${default[@]}" MEMORY_SEARCH__RRF_K=10
# The same model on ONNX Runtime: full precision (candle's vectors), and int8 weights.
onnx_dir="$(bash "$ROOT/scripts/models.sh" --onnx | tail -n 1)"
onnx=(MEMORY_EMBEDDINGS__PROVIDER=local MEMORY_EMBEDDINGS__MODEL_DIR="$onnx_dir"
    MEMORY_EMBEDDINGS__ONNXRUNTIME_LIBRARY="$ort_lib")
measure "minilm on onnx runtime" "${onnx[@]}"
cosine "local/all-MiniLM-L6-v2 int8" "$onnx_dir" EMBED_ONNXRUNTIME_LIBRARY="$ort_lib" EMBED_QUANTIZED=1
measure "minilm int8 (onnx runtime)" "${onnx[@]}" MEMORY_EMBEDDINGS__QUANTIZED=true
cosine "minilm cosine + prf (1 doc, 0.1)" "$default_dir" HARD_SET_PRF_DOCS=1 HARD_SET_PRF_WEIGHT=0.1
cosine "minilm cosine + prf (3 docs, 0.5)" "$default_dir" HARD_SET_PRF_DOCS=3 HARD_SET_PRF_WEIGHT=0.5
fi
if [[ -n ${BENCH_LLM_URL:-} && -n ${BENCH_LLM_MODEL:-} && -n ${BENCH_LLM_KEY:-} ]]; then
    measure "minilm, llm rewrite ($BENCH_LLM_MODEL)" "${default[@]}" MEMORY_SEARCH__LLM_REWRITE=true \
        MEMORY_LLM__BASE_URL="$BENCH_LLM_URL" MEMORY_LLM__MODEL="$BENCH_LLM_MODEL"
else
    warn "no BENCH_LLM_URL, BENCH_LLM_MODEL and BENCH_LLM_KEY: the LLM rewrite row is skipped"
fi

IFS=';' read -r -a extras <<<"${BENCH_RETRIEVAL_EXTRA:-}"
for spec in "${extras[@]}"; do
    [[ -n $spec ]] || continue
    read -r -a settings <<<"${spec#*|}"
    measure "${spec%%|*}" "${settings[@]}"
done

python3 "$EVAL" table "$ROWS"

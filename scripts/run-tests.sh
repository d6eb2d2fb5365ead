#!/usr/bin/env bash
# Runs the workspace's tests (called by `make test` once the servers are up and the binaries
# built): the tests that restart RabbitMQ alone, then everything else in parallel. The
# chaos tests (tests/e2e/tests/chaos.rs) are left to `make chaos`, which `make test` runs next.
# Uses cargo-nextest when it is installed, else cargo's own runner.
set -euo pipefail

SERIAL=serial_broker_restart_
CHAOS=chaos_
CARGO="${CARGO:-cargo}"

# The local embedding model's tests load the weights the project fetches itself, with their
# ONNX export, and the ONNX Runtime library it installs.
if [[ -z ${EMBED_MODEL_DIR:-} ]]; then
    EMBED_MODEL_DIR="$("$(dirname "${BASH_SOURCE[0]}")/models.sh" --onnx | tail -n 1)"
    export EMBED_MODEL_DIR
fi
# The services' default model, all-mpnet-base-v2: the embed crate's MPNet tests load it (the
# suites keep the small model above for speed).
if [[ -z ${EMBED_MPNET_DIR:-} ]]; then
    EMBED_MPNET_DIR="$("$(dirname "${BASH_SOURCE[0]}")/models.sh" --onnx all-mpnet-base-v2 | tail -n 1)"
    export EMBED_MPNET_DIR
fi
if [[ -z ${EMBED_ONNXRUNTIME_LIBRARY:-} ]]; then
    EMBED_ONNXRUNTIME_LIBRARY="$("$(dirname "${BASH_SOURCE[0]}")/models.sh" --onnxruntime | tail -n 1)"
    export EMBED_ONNXRUNTIME_LIBRARY
fi

# The hard retrieval set: counts, distractors, and no question sharing a content word with
# its answer.
python3 "$(dirname "${BASH_SOURCE[0]}")/bench/hard_set.py"

if "$CARGO" nextest --version >/dev/null 2>&1; then
    # The broker-restart test first: the broker then holds none of this run's queues, which it
    # would have to recover when it starts again.
    "$CARGO" nextest run --workspace --no-fail-fast --test-threads 1 -E "test(/$SERIAL/)"
    "$CARGO" nextest run --workspace --no-fail-fast -E "not test(/$SERIAL/) and not test(/$CHAOS/)"
else
    "$CARGO" test --workspace --no-fail-fast -- "$SERIAL" --test-threads 1
    "$CARGO" test --workspace --no-fail-fast -- --skip "$SERIAL" --skip "$CHAOS"
fi

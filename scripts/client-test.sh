#!/usr/bin/env bash
# The generated-client test (run by `make test`): generates a Python client from each
# committed OpenAPI document with openapi-python-client (from scripts/tools.sh's venv) into
# the cache, starts both APIs on fresh databases (api-stack.sh), and runs
# tests/clients/scenario.py: every operation of each document called with valid data through
# its client, every answer parsed strictly. Run after `cargo build --bins`.
set -euo pipefail

usage() {
    echo "usage: scripts/client-test.sh [-h]   (debug binaries of the target directory; BIN overrides)"
}
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
only_help_args "$@"
# shellcheck source=scripts/api-stack.sh
. "$ROOT/scripts/api-stack.sh"
cd "$ROOT"

VENV="$CACHE_DIR/venv-api-tests"
[[ -x $VENV/bin/openapi-python-client ]] || bash "$ROOT/scripts/tools.sh" >&2

trap 'exit 130' INT
trap 'exit 143' TERM

# Generated code is not committed: it is made again from the committed documents each run.
GENERATED="$(mktemp -d "${TMPDIR:-/tmp}/memmail-clients.XXXXXX")"
trap 'rc=$?; rm -rf "$GENERATED"; stack_stop $rc' EXIT
for service in memory mail; do
    printf 'package_name_override: %s_client\nproject_name_override: %s-client\n' \
        "$service" "$service" >"$GENERATED/$service.yaml"
    PATH="$VENV/bin:$PATH" "$VENV/bin/openapi-python-client" generate \
        --path "proto-docs/$service-api.openapi.json" --config "$GENERATED/$service.yaml" \
        --meta none --output-path "$GENERATED/${service}_client" --overwrite \
        >"$GENERATED/$service.log" 2>&1 ||
        { cat "$GENERATED/$service.log" >&2; die "openapi-python-client failed on proto-docs/$service-api.openapi.json"; }
done
log "clients: generated from proto-docs/*.openapi.json"

stack_start clients
PYTHONPATH="$GENERATED:$ROOT/tests/clients" "$VENV/bin/python" tests/clients/scenario.py

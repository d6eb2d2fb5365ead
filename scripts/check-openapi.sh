#!/usr/bin/env bash
# Validate OpenAPI JSON documents as OpenAPI 3.1 with openapi-spec-validator
# (from the venv that scripts/tools.sh makes; it is made first if missing).
# Exit 0 when every file is valid, 1 when any is not, 2 on bad usage.
set -euo pipefail

usage() {
    echo "usage: scripts/check-openapi.sh [-h] FILE...   (validate each FILE as an OpenAPI 3.1 JSON document)"
}
case "${1:-}" in
-h | --help)
    usage
    exit 0
    ;;
"")
    usage >&2
    exit 2
    ;;
esac

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VENV="$CACHE_DIR/venv"
if [[ ! -x $VENV/bin/openapi-spec-validator ]]; then
    bash "$ROOT/scripts/tools.sh" >&2
fi

failed=0
for f in "$@"; do
    if [[ ! -f $f ]]; then
        echo "$f: FAIL: no such file" >&2
        failed=$((failed + 1))
        continue
    fi
    # Must be JSON (the validator alone would also take YAML).
    if ! err="$("$VENV/bin/python" -c 'import json, sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$f" 2>&1)"; then
        echo "$f: FAIL: not valid JSON: ${err##*$'\n'}" >&2
        failed=$((failed + 1))
        continue
    fi
    # --schema 3.1: validate against the 3.1 schema whatever the document claims,
    # so a 3.0 document fails on its `openapi` field.
    if out="$("$VENV/bin/openapi-spec-validator" --schema 3.1 --validation-errors all "$f" 2>&1)"; then
        echo "$f: OK (OpenAPI 3.1)"
    else
        printf '%s\n' "$out" >&2
        echo "$f: FAIL: not a valid OpenAPI 3.1 document" >&2
        failed=$((failed + 1))
    fi
done

if ((failed > 0)); then
    echo "check-openapi: $failed of $# file(s) invalid" >&2
    exit 1
fi

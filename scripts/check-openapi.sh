#!/usr/bin/env bash
# Validate OpenAPI JSON documents as OpenAPI 3.1 with openapi-spec-validator
# (from the venv that scripts/tools.sh makes; it is made first if missing), then lint each
# with Redocly's recommended rules and Spectral's OpenAPI rules (npm packages pinned in
# tests/lint/package-lock.json, installed with `npm ci` into ${CACHE_DIR}/openapi-lint when
# missing or when the lock changed): errors fail the check, warnings are printed.
# Exit 0 when every file is valid, 1 when any is not, 2 on bad usage.
set -euo pipefail

usage() {
    echo "usage: scripts/check-openapi.sh [-h] FILE...   (validate each FILE as an OpenAPI 3.1 JSON document and lint it with Redocly and Spectral)"
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

# The linters, from the registry through the lock file; a second run only compares the lock.
LINT="$CACHE_DIR/openapi-lint"
if ! cmp -s "$ROOT/tests/lint/package-lock.json" "$LINT/package-lock.json" ||
    [[ ! -x $LINT/node_modules/.bin/redocly || ! -x $LINT/node_modules/.bin/spectral ]]; then
    command -v npm >/dev/null || bash "$ROOT/scripts/tools.sh" >&2
    mkdir -p "$LINT"
    rm -f "$LINT/package-lock.json"
    cp "$ROOT/tests/lint/package.json" "$LINT/package.json"
    cp "$ROOT/tests/lint/package-lock.json" "$LINT/package-lock.json.new"
    mv "$LINT/package-lock.json.new" "$LINT/package-lock.json"
    (cd "$LINT" && npm ci --ignore-scripts --no-audit --no-fund --silent) >&2 ||
        { rm -f "$LINT/package-lock.json"; die "npm ci of the OpenAPI linters failed"; }
fi
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_UPDATE_NOTIFIER=1

# Redocly and Spectral on one document: 0 errors (warnings do not fail it).
lint() {
    local f="$1" out
    if ! out="$("$LINT/node_modules/.bin/redocly" lint --config "$ROOT/tests/lint/redocly.yaml" \
        --format stylish "$f" 2>&1)"; then
        printf '%s\n' "$out" | grep -v '^ *[║╔╚]' >&2
        echo "$f: FAIL: Redocly reports errors" >&2
        return 1
    fi
    if ! out="$("$LINT/node_modules/.bin/spectral" lint --ruleset "$ROOT/tests/lint/.spectral.yaml" \
        --fail-severity error --format text "$f" 2>&1)"; then
        printf '%s\n' "$out" | grep -E ' error ' >&2 || printf '%s\n' "$out" >&2
        echo "$f: FAIL: Spectral reports errors" >&2
        return 1
    fi
    echo "$f: OK (Redocly and Spectral: 0 errors)"
}

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
        lint "$f" || failed=$((failed + 1))
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

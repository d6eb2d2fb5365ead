#!/usr/bin/env bash
# The TypeScript client's test (run by `make test`): installs the package's pinned npm tools
# (clients/typescript/package-lock.json, `npm ci` into ${CACHE_DIR}/ts-client when missing or
# when the lock changed), generates the clients again from the committed documents and fails
# when they differ from the committed src/generated/ (drift), builds the package with
# `tsc --strict`, starts both APIs on fresh databases (api-stack.sh) and runs the package's
# tests with Node's own test runner: the retry policy through a fault proxy, and every
# operation of the documents through the typed clients. Run after `cargo build --bins`.
#
# `--generate` only writes the generated clients into clients/typescript/src/generated/
# (`make openapi` runs it after writing the documents).
set -euo pipefail

usage() {
    echo "usage: scripts/ts-client-test.sh [-h] [--generate]   (debug binaries of the target directory; BIN overrides)"
}
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
GENERATE_ONLY=0
case "${1:-}" in
--generate) GENERATE_ONLY=1 ;;
*) only_help_args "$@" ;;
esac
cd "$ROOT"

PACKAGE="$ROOT/clients/typescript"
TOOLS="$CACHE_DIR/ts-client"
command -v npm >/dev/null || bash "$ROOT/scripts/tools.sh" >&2
command -v npm >/dev/null || die "no npm (Node.js 20.19 or later with npm is needed)"
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' ||
    die "Node.js $(node --version) is older than 20.19, which the generator needs"
# The generator and compiler, from the registry through the lock file; a second run only
# compares the lock.
if ! cmp -s "$PACKAGE/package-lock.json" "$TOOLS/package-lock.json" ||
    [[ ! -x $TOOLS/node_modules/.bin/tsc || ! -x $TOOLS/node_modules/.bin/openapi-ts ]]; then
    mkdir -p "$TOOLS"
    rm -f "$TOOLS/package-lock.json"
    cp "$PACKAGE/package.json" "$TOOLS/package.json"
    cp "$PACKAGE/package-lock.json" "$TOOLS/package-lock.json.new"
    mv "$TOOLS/package-lock.json.new" "$TOOLS/package-lock.json"
    (cd "$TOOLS" && npm ci --ignore-scripts --no-audit --no-fund --silent) >&2 ||
        { rm -f "$TOOLS/package-lock.json"; die "npm ci of the TypeScript client's tools failed"; }
fi

# A scratch copy of the package beside the installed tools (the work tree stays clean).
BUILD="$(mktemp -d "${TMPDIR:-/tmp}/memmail-ts-client.XXXXXX")"
cleanup() { rm -rf "$BUILD"; }
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'cleanup' EXIT
cp -r "$PACKAGE/package.json" "$PACKAGE/tsconfig.json" "$PACKAGE/scripts" "$PACKAGE/src" "$PACKAGE/test" "$PACKAGE/examples" "$BUILD/"
ln -s "$TOOLS/node_modules" "$BUILD/node_modules"

if ((GENERATE_ONLY)); then
    (cd "$BUILD" && node scripts/generate.mjs "$ROOT/proto-docs" "$PACKAGE/src/generated")
    log "ts-client: clients/typescript/src/generated written from proto-docs/"
    exit 0
fi

(cd "$BUILD" && node scripts/generate.mjs "$ROOT/proto-docs" "$BUILD/generated-check")
if ! diff -r "$PACKAGE/src/generated" "$BUILD/generated-check" >"$BUILD/drift.txt"; then
    head -n 40 "$BUILD/drift.txt" >&2
    die "clients/typescript/src/generated differs from what proto-docs/ generates: run \`make openapi\` and commit"
fi
log "ts-client: the generated clients match proto-docs/"

(cd "$BUILD" && node_modules/.bin/tsc -p tsconfig.json --strict) ||
    die "clients/typescript does not build with tsc --strict"
log "ts-client: built with tsc --strict"

# shellcheck source=scripts/api-stack.sh
. "$ROOT/scripts/api-stack.sh"
trap 'rc=$?; cleanup; stack_stop $rc' EXIT
stack_start tsclient
(cd "$BUILD" && PROTO_DOCS="$ROOT/proto-docs" node --test --test-concurrency=1 --test-reporter=spec dist/test/*.test.js)

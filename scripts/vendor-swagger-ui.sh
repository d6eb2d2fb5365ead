#!/usr/bin/env bash
# The API reference pages (`/docs` of both APIs) run Swagger UI from a copy committed under
# crates/http-kit/vendor/swagger-ui-dist, compiled into the binaries: nothing is loaded from
# elsewhere at run time. This script fetches the pinned swagger-ui-dist package from the npm
# registry (`npm pack`), checks the tarball against the pinned integrity (sha512, as npm's
# lockfiles state it), and copies the files the pages use, with the licenses, and their
# SHA-256 sums (SHA256SUMS).
#
#   scripts/vendor-swagger-ui.sh           (re)write the vendored copy
#   scripts/vendor-swagger-ui.sh --check   fetch and verify that the committed copy is exactly
#                                          the pinned package's files (exit 1 otherwise)
#
# To move to another version: change VERSION and INTEGRITY (`npm view swagger-ui-dist@X
# dist.integrity`), run the script, and the path of the assets follows (http_kit::reference).
set -euo pipefail

usage() {
    echo "usage: scripts/vendor-swagger-ui.sh [--check | -h]"
}
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION=5.35.0
INTEGRITY='sha512-U06rpMtW9V3XPGOBeamTUSr0Z09jMX4IJuANpE/EZbAhw0G8CgwrzU4YmXkn/h0wCDNsXdGarTNNHC3sU8yVUQ=='
FILES=(
    LICENSE
    NOTICE
    swagger-ui-bundle.js
    swagger-ui-bundle.js.LICENSE.txt
    swagger-ui.css
    favicon-32x32.png
)
DEST="$ROOT/crates/http-kit/vendor/swagger-ui-dist"

check=0
case "${1:-}" in
--check) check=1 ;;
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

command -v npm >/dev/null || die "npm is needed (Debian: apt-get install npm)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

(cd "$work" && npm pack --silent "swagger-ui-dist@$VERSION" >/dev/null)
tarball="$work/swagger-ui-dist-$VERSION.tgz"
[[ -s $tarball ]] || die "npm pack gave no swagger-ui-dist-$VERSION.tgz"
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
[[ $actual == "$INTEGRITY" ]] || die "swagger-ui-dist $VERSION: integrity $actual, pinned $INTEGRITY"
tar -xzf "$tarball" -C "$work"

sums() {
    (cd "$1" && sha256sum "${FILES[@]}")
}

if ((check)); then
    [[ "$(cat "$DEST/VERSION" 2>/dev/null)" == "$VERSION" ]] || die "$DEST/VERSION is not $VERSION"
    diff <(sums "$work/package") "$DEST/SHA256SUMS" >&2 || die "SHA256SUMS differs from the package's files"
    diff <(sums "$work/package") <(sums "$DEST") >&2 ||
        die "the vendored files differ from swagger-ui-dist $VERSION (run scripts/vendor-swagger-ui.sh)"
    log "swagger-ui-dist $VERSION: the vendored copy matches the pinned package ($INTEGRITY)"
    exit 0
fi

rm -rf "$DEST"
mkdir -p "$DEST"
for f in "${FILES[@]}"; do
    cp "$work/package/$f" "$DEST/$f"
done
printf '%s\n' "$VERSION" >"$DEST/VERSION"
sums "$DEST" >"$DEST/SHA256SUMS"
log "swagger-ui-dist $VERSION vendored in ${DEST#"$ROOT"/} ($INTEGRITY)"

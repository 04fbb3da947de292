#!/bin/bash
# Build the Debian package of mini into OUTDIR: mini_VERSION-1_ARCH.deb.
#
#   scripts/build-deb.sh OUTDIR [BUILD_DIR]
#
# Without BUILD_DIR, a Release build is made in a temporary directory (and
# removed).  With it, that build directory is packaged as it is (it must be
# configured; it is built first).  CPack's DEB generator installs it with
# the prefix /usr, strips the programs and computes the library dependencies
# with dpkg-shlibdeps (packaging/CMakeLists.txt).  Needs dpkg-dev.  Check
# it with `lintian OUTDIR/mini_*.deb` (the package carries its justified
# overrides, packaging/debian/lintian-overrides).
set -euo pipefail
if [[ $# -lt 1 || $# -gt 2 || $1 == -h || $1 == --help ]]; then
    sed -n '2,12s/^# \{0,1\}//p' "$0"
    [[ $# -ge 1 && ( $1 == -h || $1 == --help ) ]] && exit 0
    exit 2
fi
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
tmp=()
trap 'rm -rf "${tmp[@]}"' EXIT
command -v dpkg-shlibdeps >/dev/null || { echo "build-deb: dpkg-shlibdeps not found: apt-get install dpkg-dev" >&2; exit 1; }
if [[ $# == 2 ]]; then
    build=$(cd "$2" && pwd)
    [[ -f $build/CPackConfig.cmake ]] || { echo "build-deb: $build is not a configured build directory" >&2; exit 1; }
    if grep -q '^MINI_SANITIZE:BOOL=ON$' "$build/CMakeCache.txt"; then
        echo "build-deb: $build is a sanitizer build; package a Release build" >&2
        exit 1
    fi
else
    build=$(mktemp -d "${TMPDIR:-/tmp}/mini-deb.XXXXXX")
    tmp+=("$build")
    cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMINI_FUZZ=OFF >/dev/null
fi
cmake --build "$build" -j"$(nproc)" >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/mini-cpack.XXXXXX")
tmp+=("$work")
(cd "$build" && cpack -G DEB -B "$work" --config "$build/CPackConfig.cmake" >"$work/cpack.log" 2>&1) || {
    cat "$work/cpack.log" >&2
    exit 1
}
deb=$(ls "$work"/*.deb)
mv "$deb" "$out/"
deb=$out/$(basename "$deb")
echo "build-deb: $deb"

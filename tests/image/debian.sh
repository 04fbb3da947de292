#!/bin/bash
# A real image: Debian bookworm minbase with python3 and git, built by
# mmdebstrap (from Debian's archive; skipped without it), imported, and
# python3 and git run in it under strict and standard, as root and
# rootless.  Prints the import time against tar -x of the same tarball.
# The tarball is kept in the build tree (image-fixtures/) for the next run.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
CACHE=${MINI_BUILD_DIR:-/tmp}/image-fixtures
TAR=$CACHE/debian-bookworm.tar
# A cache that is not a tarball (an interrupted or older build) goes.
if [[ -e $TAR && ! -f $TAR && $(id -u) == 0 ]]; then rm -rf "$TAR"; fi
# The root and rootless variants run side by side: one builds, the other
# waits for it (the lock), then finds the tarball.
if [[ ! -s $TAR && $(id -u) == 0 ]]; then
    mkdir -p "$CACHE"
    chmod 0755 "$CACHE"
    exec 9>"$CACHE/build.lock"
    flock 9
fi
if [[ ! -s $TAR && $(id -u) == 0 ]]; then
    command -v mmdebstrap >/dev/null || skip_all "mmdebstrap is not installed (scripts/install-deps.sh)"
    echo "# building $TAR with mmdebstrap (once)"
    if ! timeout 600 mmdebstrap --quiet --format=tar --variant=minbase --include=python3,git bookworm "$TAR.tmp" >"$CACHE/mmdebstrap.log" 2>&1; then
        rm -f "$TAR.tmp"
        tail -5 "$CACHE/mmdebstrap.log"
        skip_all "mmdebstrap could not build the image (no access to Debian's archive?)"
    fi
    chmod 0644 "$TAR.tmp"
    mv "$TAR.tmp" "$TAR"
fi
exec 9>&-
mini_test_init "$@"
. "$(dirname "${BASH_SOURCE[0]}")/image_lib.sh"
[[ -f $TAR && -s $TAR ]] || skip_all "no Debian tarball: run this test as root once (mmdebstrap), or put one at $TAR"

t0=$(now_ms)
run img import --name debian:bookworm "$TAR"
t1=$(now_ms)
if [[ $RC == 0 ]]; then pass "import the Debian root filesystem"; else fail "import the Debian root filesystem"; fi
mkdir "$T/x"
t2=$(now_ms)
tar -C "$T/x" -xf "$TAR" 2>/dev/null || true
t3=$(now_ms)
rm -rf "$T/x"
log "# figures: image import $((t1 - t0)) ms, tar -x $((t3 - t2)) ms (ratio $(python3 -c "print(round($((t1 - t0)) / max(1, $((t3 - t2))), 2))"))"
# The same tarball again: known by its digest, only hashed, not extracted.
t4=$(now_ms)
expect_out "reimport: the archive is known by its digest, not extracted again" "imported before" \
    img import --name debian:again "$TAR"
t5=$(now_ms)
log "# figures: import again $((t5 - t4)) ms (the first $((t1 - t0)) ms)"

start_daemon
for SBX_PROFILE in strict standard; do
    expect_eq "$SBX_PROFILE: python3 runs in the image" "3.11" sbx --image debian:bookworm -- \
        python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])'
    expect_out "$SBX_PROFILE: git runs in the image" "git version 2.39" sbx --image debian:bookworm -- git --version
    expect_eq "$SBX_PROFILE: git commits in the workspace" "1" sbx --image debian:bookworm -- \
        "cd $WS && rm -rf repo && git init -q repo && cd repo && echo x >f && git add f &&
         git -c user.name=t -c user.email=t@t commit -qm m && git rev-list --count HEAD"
    expect_eq "$SBX_PROFILE: it is Debian 12" "12" sbx --image debian:bookworm -- 'cut -d. -f1 /etc/debian_version'
done

finish

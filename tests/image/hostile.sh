#!/bin/bash
# Hostile images (docs/images.md, "Hostile images"): every trick a layer or
# a manifest can play is rejected with a clear error or neutralised, and
# nothing is ever written outside the store.  Fixtures by mkimage.py.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
. "$(dirname "${BASH_SOURCE[0]}")/image_lib.sh"
have python3 || skip_all "python3 is not installed"

OUTSIDE=$T/outside   # a canary directory every escape aims at
mkdir -p "$OUTSIDE"
H=$T/h
mkdir -p "$H"
mk() { python3 "$MKIMAGE" hostile "$@"; }

mk dotdot "$H/dotdot.tar"
expect_import_fails "../ in a name is rejected" '".." component' "$H/dotdot.tar"
mk dotdot-deep "$H/dotdot-deep.tar"
expect_import_fails "a/../../ in a name is rejected" '".." component' "$H/dotdot-deep.tar"
mk absolute "$H/absolute.tar" "$OUTSIDE"
expect_import_fails "an absolute name is rejected" "absolute path" "$H/absolute.tar"
mk symlink-dir "$H/symlink-dir.tar" "$OUTSIDE"
expect_import_fails "a file through a symlink to an absolute path is rejected" "symbolic link" "$H/symlink-dir.tar"
mk symlink-rel "$H/symlink-rel.tar" "$OUTSIDE"
expect_import_fails "a file through a ../../ symlink is rejected" "symbolic link" "$H/symlink-rel.tar"
mk hardlink-out "$H/hardlink-out.tar"
expect_import_fails "a hard link to ../../etc/passwd is rejected" "hard link" "$H/hardlink-out.tar"
mk hardlink-abs "$H/hardlink-abs.tar"
expect_import_fails "a hard link to /etc/passwd is rejected" "absolute path" "$H/hardlink-abs.tar"
mk hardlink-symlink "$H/hardlink-symlink.tar" "$OUTSIDE"
touch "$OUTSIDE/target"
expect_import_fails "a hard link through a symlink is rejected" "not a file of this layer" "$H/hardlink-symlink.tar"
rm -f "$OUTSIDE/target"
mk newline "$H/newline.tar"
expect_import_fails "a name with a newline is rejected" "control character" "$H/newline.tar"
mk whiteout-dot "$H/whiteout-dot.tar"
expect_import_fails "a whiteout of .. is rejected" "invalid whiteout" "$H/whiteout-dot.tar"
mk huge "$H/huge.tar"
expect_import_fails "a 100 GiB file is rejected (default limit at most 64 GiB)" "limit" "$H/huge.tar"
if truncate -s 1T "$H/sparse" 2>/dev/null && tar -C "$H" -cSf "$H/sparse.tar" sparse 2>/dev/null; then
    rm -f "$H/sparse"
    expect_import_fails "a 1 TiB sparse file is rejected" "limit" --format rootfs "$H/sparse.tar"
    expect_import_fails "a 1 TiB sparse file is rejected under --max-size too" "limit" --format rootfs --max-size 1G \
        "$H/sparse.tar"
else
    rm -f "$H/sparse"
    skip "sparse file" "cannot make a 1 TiB sparse file here"
fi
mk bomb "$H/bomb.tar.gz"
expect_import_fails "a gzip bomb (200 MiB of zeros in ~200 KiB) stops at --max-size" "limit" --max-size 50M "$H/bomb.tar.gz"
mk many "$H/many.tar" 3000
expect_import_fails "more entries than --max-entries" "more than 1000 entries" --max-entries 1000 "$H/many.tar"
mk trailing "$H/trailing.tar.gz"
expect_import_fails "megabytes after the end of a tar" "after the end of the tar" "$H/trailing.tar.gz"
printf 'not a tar at all' >"$H/garbage"
expect_import_fails "a file that is no archive" "not a tar" "$H/garbage"

# Manifests that lie.
for lie in layer_size layer_digest config_digest config_size diff_id; do
    mk "oci-$lie" "$H/oci-$lie"
done
expect_import_fails "a layer larger than its manifest says" "larger than" "$H/oci-layer_size"
expect_import_fails "a layer whose digest is wrong" "digest mismatch" "$H/oci-layer_digest"
expect_import_fails "a config whose digest is wrong" "digest mismatch" "$H/oci-config_digest"
expect_import_fails "a config whose size is wrong" "descriptor says" "$H/oci-config_size"
expect_import_fails "a layer whose diff id is wrong" "diff id mismatch" "$H/oci-diff_id"

# The other formats' hostile variants: a loop in a legacy archive's
# parent chain, a parent that is not there, image indexes nested 50 deep,
# hard links to a lower layer's file that a whiteout removed, through a
# symlink out, to a directory; an oci-archive whose layer is not its digest.
mk legacy-loop "$H/legacy-loop.tar"
expect_import_fails "a legacy archive whose parent chain loops" "a loop in the layers' parent chain" \
    "$H/legacy-loop.tar"
mk legacy-noparent "$H/legacy-noparent.tar"
expect_import_fails "a legacy archive whose parent is missing" "no valid member dddd" "$H/legacy-noparent.tar"
mk nest-bomb "$H/nest-bomb"
expect_import_fails "image indexes nested 50 deep" "nested more than 8 deep" "$H/nest-bomb"
mk xlink-whiteout "$H/xlink-whiteout"
expect_import_fails "a hard link to a lower file this layer whited out" 'hard link etc/h points to "etc/ok"' \
    "$H/xlink-whiteout"
mk xlink-symlink "$H/xlink-symlink" "$OUTSIDE"
touch "$OUTSIDE/target"
expect_import_fails "a hard link through a lower layer's symlink out" 'points to "evil/target"' "$H/xlink-symlink"
rm -f "$OUTSIDE/target"
mk xlink-dir "$H/xlink-dir"
expect_import_fails "a hard link to a lower layer's directory" 'points to "etc"' "$H/xlink-dir"
mk ociar-digest "$H/ociar-digest.tar"
S=$STORE
export MINI_IMAGE_STORE=$T/store-ociar   # a store that has not this layer yet
STORE=$MINI_IMAGE_STORE
expect_import_fails "an oci-archive layer that is not its digest" "digest mismatch" "$H/ociar-digest.tar"
export MINI_IMAGE_STORE=$S
STORE=$S

# Neutralised, the import succeeds.
mk device "$H/device.tar"
expect_out "device nodes are skipped" "device:latest" img import "$H/device.tar"
contains "$ERR" "skipped 2 device node" && pass "the import says it skipped them" ||
    fail "the import says it skipped them"
check "no device node in the image" test ! -e "$(image_root device)/etc/sda"
mk fifo "$H/fifo.tar"
expect_out "FIFOs are skipped" "fifo:latest" img import "$H/fifo.tar"
check "no FIFO in the image" test ! -e "$(image_root fifo)/etc/fifo"
mk setuid "$H/setuid.tar"
expect_out "setuid files are imported" "setuid:latest" img import "$H/setuid.tar"
R=$(image_root setuid)
check "setuid bit dropped" test "$(stat -c %a "$R/etc/suid")" = 755
check "setgid bit dropped" test "$(stat -c %a "$R/etc/sgid")" = 755
check "setgid directory bit dropped" test "$(stat -c %a "$R/etc/sgiddir")" = 775
mk symlink-only "$H/symlink-only.tar" "$OUTSIDE"
expect_out "a symlink pointing out is stored as a link, never followed" "symlink-only:latest" \
    img import "$H/symlink-only.tar"
check "the link is kept as it is" test "$(readlink "$(image_root symlink-only)/etc/link-out")" = "$OUTSIDE/pwned"
mk oci-symlink-layer "$H/oci-symlink-layer" "$OUTSIDE"
expect_out "a later layer's directory replaces an earlier layer's symlink out" "oci-symlink-layer" \
    img import "$H/oci-symlink-layer"
check "the directory replaced the symlink" test -d "$(image_root oci-symlink-layer:test)/etc" -a \
    ! -L "$(image_root oci-symlink-layer:test)/etc"

check "nothing was written outside the store" test -z "$(ls -A "$OUTSIDE")"
check "no escape-* file anywhere under the temp dir" test -z "$(find "$T" -name 'escape-*' 2>/dev/null)"
check "no escape-* file in /tmp" test -z "$(find /tmp -maxdepth 1 -name 'escape-*' 2>/dev/null)"
check "the store's tmp/ is empty" test -z "$(ls -A "$STORE/tmp")"

finish

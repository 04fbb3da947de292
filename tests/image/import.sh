#!/bin/bash
# Image import end to end (docs/images.md): an OCI layout and a
# docker-archive of the same two-layer busybox image (tests/image/mkimage.py),
# whiteouts and opaque directories applied, layers shared, names, inspect,
# rm, prune, a root filesystem tarball, two imports at once, an import
# killed half-way (nothing half-imported is ever listed), and a gzip bomb
# stopped by the default --max-size on a small filesystem.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
. "$(dirname "${BASH_SOURCE[0]}")/image_lib.sh"
have python3 || skip_all "python3 is not installed"
[[ -x /bin/busybox ]] || skip_all "busybox-static is not installed"

python3 "$MKIMAGE" oci "$T/bb-oci"
python3 "$MKIMAGE" docker "$T/bb-docker.tar"

expect_out "import an OCI layout" "bb-oci:test sha256:" img import "$T/bb-oci"
R=$(image_root bb-oci:test)
check "layer 2's whiteout removed etc/removed.txt" test ! -e "$R/etc/removed.txt"
check "layer 2's whiteout removed usr/share/gone" test ! -e "$R/usr/share/gone"
check "opaque directory: opq/a of layer 1 hidden" test ! -e "$R/opq/a"
check "opaque directory: opq/b of layer 2 there" test -f "$R/opq/b"
check "layer 2 adds etc/motd" grep -q "hello from layer 2" "$R/etc/motd"
check "layer 1 files kept (etc/passwd)" grep -q "^root:" "$R/etc/passwd"
check "hard link kept" test "$R/etc/hosts.link" -ef "$R/etc/passwd"
check "layer 2's hard link to a file of layer 1" test "$R/etc/passwd.hard" -ef "$R/etc/passwd"
check "symlink kept" test "$(readlink "$R/bin/sh")" = busybox
check "mode kept (etc/secret 600)" test "$(stat -c %a "$R/etc/secret")" = 600
check "mode kept (home/user 700)" test "$(stat -c %a "$R/home/user")" = 700
check "sticky bit kept (tmp 1777)" test "$(stat -c %a "$R/tmp")" = 1777
if is_root; then
    check "as root, ownership kept (home/user is 1000:1000)" test "$(stat -c %u:%g "$R/home/user/notes")" = 1000:1000
else
    check "rootless, files are the importer's" test "$(stat -c %u "$R/home/user/notes")" = "$(id -u)"
    check "rootless, the original owner is recorded" grep -q '"home/user/notes",1000,1000' "$STORE"/layers/*/layer.json
fi

expect_out "import the same image as a docker-archive: its layers are shared" "2 already stored" \
    img import "$T/bb-docker.tar"
check "two layers stored once" test "$(ls "$STORE/layers" | wc -l)" = 2
check "one image, two names" test "$(ls "$STORE/images" | wc -l)" = 1
expect_out "ls shows the docker name" "busybox-docker:latest" img ls
run img inspect --json busybox-docker
wd=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["config"]["config"]["WorkingDir"])' 2>&1)
check "inspect --json: the config's WorkingDir" test "$wd" = /work
expect_out "inspect --json: both names" '"bb-oci:test"' img inspect --json busybox-docker:latest
expect_out "inspect by id prefix" "Names: bb-oci:test busybox-docker:latest" img inspect "$(ls "$STORE/images" | cut -c1-12)"
expect_rc "inspect of an unknown image fails" 1 img inspect nosuch
expect_out "import --name" "renamed:v1 sha256:" img import --name renamed:v1 "$T/bb-oci:test"

# A root filesystem tarball (as tar -C rootfs -c . makes it), gzip'd.
tar -C "$R" -czf "$T/rootfs.tar.gz" .
expect_out "import a root filesystem tarball" "myroot:latest" img import --name myroot "$T/rootfs.tar.gz"
R2=$(image_root myroot)
check "the tarball's root has etc/motd" test -f "$R2/etc/motd"
check "the tarball's root has bin/busybox" test -x "$R2/bin/busybox"
expect_out "a tarball is named after its file" "rootfs:latest" img import "$T/rootfs.tar.gz"

expect_out "rm one name keeps the image" "removed" img rm bb-oci:test
check "image still there" test "$(ls "$STORE/images" | wc -l)" = 2
run img rm busybox-docker renamed:v1
check "rm its last names removes the image and its layers" \
    test "$(ls "$STORE/images" | wc -l)" = 1 -a "$(ls "$STORE/layers" | wc -l)" = 1

# Two imports of the same image at once.
rm -rf "$STORE"
img import "$T/bb-oci" >"$T/a.out" 2>&1 & pa=$!
img import "$T/bb-docker.tar" >"$T/b.out" 2>&1 & pb=$!
ra=0; rb=0; wait $pa || ra=$?; wait $pb || rb=$?
RC="$ra/$rb" OUT=$(cat "$T/a.out" "$T/b.out") ERR=
if [[ $ra == 0 && $rb == 0 && $(ls "$STORE/images" | wc -l) == 1 && $(ls "$STORE/layers" | wc -l) == 2 &&
      -z $(ls -A "$STORE/tmp") ]]; then pass "two imports at once: one image, layers once"
else fail "two imports at once: one image, layers once"; fi

# An import killed half-way: the layer blob is a FIFO fed half the data.
rm -rf "$STORE"
cp -r "$T/bb-oci" "$T/slow-oci"
big=$(ls -S "$T/slow-oci/blobs/sha256" | head -1)
mv "$T/slow-oci/blobs/sha256/$big" "$T/big.blob"
mkfifo "$T/slow-oci/blobs/sha256/$big"
( head -c 300000 "$T/big.blob"; exec sleep 60 ) >"$T/slow-oci/blobs/sha256/$big" & writer=$!
"$MINI_BIN/mini-sandbox" image import "$T/slow-oci" >/dev/null 2>&1 & importer=$!
wait_until 20 bash -c "ls -d '$STORE'/tmp/import-*/layer-0/tree" >/dev/null 2>&1 || true
sleep 0.3
kill -9 $importer 2>/dev/null; wait $importer 2>/dev/null || true
kill $writer 2>/dev/null || true; wait $writer 2>/dev/null || true
check "the killed import left work in tmp/" test -n "$(ls -A "$STORE/tmp")"
run img ls
if [[ $RC == 0 && $OUT != *slow-oci* && -z $(ls "$STORE/images") ]]; then pass "no half-imported image is listed"
else fail "no half-imported image is listed"; fi
expect_out "prune removes what the dead import left" "freed" img prune
check "tmp/ is empty after prune" test -z "$(ls -A "$STORE/tmp")"
expect_out "a new import after the crash works" "bb-oci:test" img import "$T/bb-oci"

# The other archive forms of the same image: an oci-archive (an OCI layout
# in a tar), the layout under 3 nested indexes, a pre-2016 docker save.
python3 "$MKIMAGE" oci-archive "$T/bb-ociar.tar"
python3 "$MKIMAGE" oci-nested "$T/bb-nested" 3
python3 "$MKIMAGE" docker-legacy "$T/bb-legacy.tar"
id_of() { "$MINI_BIN/mini-sandbox" image inspect --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
rm -rf "$STORE"
expect_out "import an oci-archive (named after its file and ref)" "bb-ociar:test sha256:" img import "$T/bb-ociar.tar"
check "the oci-archive's root: layer 2 applied" grep -q "hello from layer 2" "$(image_root bb-ociar:test)/etc/motd"
expect_out "--format oci-archive says it outright" "sha256:" img import --format oci-archive --name ociar2 \
    "$T/bb-ociar.tar"
expect_out "an image under 3 nested indexes: its layers shared" "2 already stored" img import "$T/bb-nested"
check "the same image id as the layout's, through the indexes" test "$(id_of bb-nested:test)" = "$(id_of bb-ociar:test)"
expect_out "import a pre-2016 docker-archive (repositories, parents)" "bb-legacy:test sha256:" \
    img import "$T/bb-legacy.tar"
RL=$(image_root bb-legacy:test)
check "legacy: whiteouts and layer 2 applied" test -f "$RL/etc/motd" -a ! -e "$RL/etc/removed.txt" -a ! -e "$RL/opq/a"
check "legacy: the hard link to layer 1's file" test "$RL/etc/passwd.hard" -ef "$RL/etc/passwd"
run img inspect --json bb-legacy:test
check "legacy: the top layer's config (Env, WorkingDir)" python3 -c '
import json, sys
c = json.loads(sys.argv[1])
assert c["format"] == "docker-archive-legacy", c["format"]
assert "IMAGE_VAR=from-image" in c["config"]["config"]["Env"] and c["config"]["config"]["WorkingDir"] == "/work"
assert len(c["config"]["rootfs"]["diff_ids"]) == 2' "$OUT"
check "legacy: its layers are the same as the others' (shared)" test "$(ls "$STORE/layers" | wc -l)" = 2

# skopeo's (and podman's) docker-archive: layers HEX.tar and the config
# HEX.json at the top, ID/layer.tar symbolic links to them, manifest.json
# after the layers.  Once taken for a root filesystem (the image's / was
# the archive's own files), now read as the image it is.
rm -rf "$STORE"
if have skopeo; then
    skopeo copy -q "oci:$T/bb-oci:test" "docker-archive:$T/bb-skopeo.tar:skopeo/bb:v1" >"$T/skopeo.log" 2>&1 ||
        fail "skopeo copy oci: docker-archive:" "$(cat "$T/skopeo.log")"
    check "skopeo wrote manifest.json after the layers" \
        test "$(tar -tf "$T/bb-skopeo.tar" | grep -n '^manifest.json$' | cut -d: -f1)" -gt 2
    expect_out "import skopeo's docker-archive (named after its RepoTags)" "docker.io/skopeo/bb:v1 sha256:" \
        img import "$T/bb-skopeo.tar"
    RS=$(image_root docker.io/skopeo/bb:v1)
    check "skopeo's docker-archive: the image's root, layer 2 applied" grep -q "hello from layer 2" "$RS/etc/motd"
    check "skopeo's docker-archive: not the archive's own files" test ! -e "$RS/manifest.json"
    run img inspect --json docker.io/skopeo/bb:v1
    check "skopeo's docker-archive: format docker-archive, two layers" python3 -c '
import json, sys
c = json.loads(sys.argv[1])
assert c["format"] == "docker-archive" and len(c["layers"]) == 2, c' "$OUT"
    skopeo copy -q "oci:$T/bb-oci:test" "docker-archive:$T/bb-skopeo2.tar" >"$T/skopeo.log" 2>&1
    expect_out "skopeo's docker-archive with --format docker-archive (no RepoTags, --name)" "sk2:latest sha256:" \
        img import --format docker-archive --name sk2 "$T/bb-skopeo2.tar"
else
    skip "skopeo's docker-archive" "skopeo is not installed (scripts/install-deps.sh --test)"
fi

# A tar that is neither an image archive nor a root filesystem (no bin,
# usr or etc at its top) is refused, never taken as a root filesystem by
# guess; --format rootfs takes it all the same.
mkdir -p "$T/notroot/project/src"
echo 'int main(void) { return 0; }' >"$T/notroot/project/src/main.c"
tar -C "$T/notroot" -cf "$T/notroot.tar" .
expect_import_fails "a tar without bin, usr or etc at its top is refused" "--format rootfs" "$T/notroot.tar"
check "the refusal names a member" contains "$ERR" '"project/"'
expect_out "--format rootfs imports it all the same" "notroot:latest sha256:" \
    img import --format rootfs "$T/notroot.tar"
mkdir -p "$T/usronly/usr/lib"
echo x >"$T/usronly/usr/lib/x"
tar -C "$T/usronly" -cf "$T/usronly.tar" usr/lib/x
expect_out "a tar with only usr/lib/x is a root filesystem" "usronly:latest" img import "$T/usronly.tar"
mkdir -p "$T/symroot/usr/bin"
ln -s usr/bin "$T/symroot/bin"
tar -C "$T/symroot" -cf "$T/symroot.tar" bin
expect_out "a tar with only the symbolic link bin -> usr/bin is a root filesystem" "symroot:latest" \
    img import "$T/symroot.tar"
printf 'x' >"$T/etcfile"
tar -C "$T" -cf "$T/etcfile.tar" etcfile --transform 's/etcfile/etc/'
expect_import_fails "a regular file named etc does not make a root filesystem" "--format rootfs" "$T/etcfile.tar"

# image tag: a second name for a stored image; rm of one name keeps the
# image while another names it.
NR=$(id_of notroot)
expect_out "image tag SRC DST" "nr:v2 $NR" img tag notroot nr:v2
expect_out "image tag without a tag: :latest" "nr2:latest $NR" img tag "${NR:7:12}" nr2
expect_out "the tagged names are listed" "nr2:latest" img ls
expect_rc "image tag to an invalid name is a usage error" 2 img tag notroot Bad:Name
expect_rc "image tag of an unknown image fails" 1 img tag nosuch x:y
expect_out "image tag moves a name that named another image" "usronly:latest $NR" img tag notroot usronly
expect_out "rm notroot" "removed notroot" img rm notroot usronly
check "the image stays while nr:v2 names it" test -d "$STORE/images/${NR:7}"
expect_out "inspect the second name" "nr:v2" img inspect nr2
run img rm nr:v2 nr2
check "rm of its last name removes it" test ! -e "$STORE/images/${NR:7}"

# import - : the archive from standard input (a pipe or a file), spooled
# into the store's tmp/ first, bounded by --max-size.
imp_stdin() { local f=$1; shift; bounded "$MINI_BIN/mini-sandbox" image import "$@" - <"$f"; }
imp_pipe() { local f=$1; shift; cat "$f" | bounded "$MINI_BIN/mini-sandbox" image import "$@" -; }
expect_out "import - of a docker-archive (a pipe): named by its RepoTags" "busybox-docker:latest sha256:" \
    imp_pipe "$T/bb-docker.tar"
expect_out "import - of an oci-archive (a file), --name" "stdin-ociar:latest sha256:" \
    imp_stdin "$T/bb-ociar.tar" --name stdin-ociar
expect_out "import - of a root filesystem tarball (gzip'd, a pipe)" "stdin-root:latest sha256:" \
    imp_pipe "$T/rootfs.tar.gz" --name stdin-root
check "its root has etc/motd" test -f "$(image_root stdin-root)/etc/motd"
rm -rf "$STORE/archives"   # not known: read in full again
run imp_pipe "$T/rootfs.tar.gz" --max-size 1K --name toobig
left=$(ls -A "$STORE/tmp" | wc -l)
if [[ $RC == 1 ]] && contains "$ERR" "standard input: more than 1024 bytes" && [[ $left == 0 ]]; then
    pass "import - stops reading at --max-size, nothing left in tmp/"
else fail "import - stops reading at --max-size, nothing left in tmp/" "$left left in tmp"; fi
run imp_stdin "$T/notroot.tar"
if [[ $RC == 1 ]] && contains "$ERR" "standard input: not an image archive" && [[ -z $(ls -A "$STORE/tmp") ]]; then
    pass "import - of a tar that is no image nor root: refused, said of standard input"
else fail "import - of a tar that is no image nor root: refused, said of standard input"; fi
printf 'not a tar at all' >"$T/garbage"
run imp_stdin "$T/garbage"
if [[ $RC == 1 ]] && contains "$ERR" "standard input: not a tar archive"; then pass "import - of what is no tar"
else fail "import - of what is no tar"; fi
expect_rc "import --format oci - is refused" 1 imp_stdin "$T/bb-docker.tar" --format oci

# An archive imported before is known by its digest (sha256 of the file,
# STORE/archives/sha256/HEX) and not extracted again: only named.
rm -rf "$STORE"
run img import --name first "$T/rootfs.tar.gz"
first=$OUT
layers_mtime=$(stat -c %Y "$STORE/layers")
expect_out "the same tarball again: imported before, named" "again:latest" img import --name again "$T/rootfs.tar.gz"
check "it says so, with the archive's digest" contains "$OUT" "imported before: the same archive, sha256:$(sha256sum "$T/rootfs.tar.gz" | cut -c1-64)"
check "the same image id" test "$(id_of again)" = "$(id_of first)"
check "no layer extracted again (tmp/ and layers/ untouched)" test -z "$(ls -A "$STORE/tmp")" -a \
    "$(stat -c %Y "$STORE/layers")" = "$layers_mtime"
expect_out "without --name: named after the file, as the first import did" "rootfs:latest" img import "$T/rootfs.tar.gz"
cp "$T/rootfs.tar.gz" "$T/other-name.tar.gz"
expect_out "the same bytes under another file name: that name" "other-name:latest" img import "$T/other-name.tar.gz"
expect_out "through standard input too" "piped:latest" imp_pipe "$T/rootfs.tar.gz" --name piped
run img rm first again rootfs other-name piped
run img prune
check "prune drops the record of an archive whose image is gone" \
    test ! -e "$STORE/archives/sha256/$(sha256sum "$T/rootfs.tar.gz" | cut -c1-64)"
expect_out "once its image is removed, the archive is imported again in full" "1 layer, 0 already stored" \
    img import --name back "$T/rootfs.tar.gz"
run img import --name dock2 "$T/bb-docker.tar"
expect_out "an image archive too" "imported before" img import --name dock3 "$T/bb-docker.tar"
expect_out "--format rootfs of the same bytes is another record" "1 layer" \
    img import --format rootfs --name asroot "$T/bb-docker.tar"
# Figures: a ~100 MB tarball twice (not a threshold; printed every run).
mkdir -p "$T/big/etc" "$T/big/usr/data"
for i in 1 2 3 4 5; do head -c 20000000 /dev/urandom >"$T/big/usr/data/f$i"; done
tar -C "$T/big" -cf "$T/big.tar" .
rm -rf "$T/big"
t0=$(now_ms); run img import --name big1 "$T/big.tar"; t1=$(now_ms)
run img import --name big2 "$T/big.tar"; t2=$(now_ms)
log "# figures: import of a $(stat -c %s "$T/big.tar")-byte tarball: first $((t1 - t0)) ms, again $((t2 - t1)) ms"
check "the second import of the big tarball is known" contains "$OUT" "imported before"

# A gzip bomb (three files of 100 MiB of zeros, ~300 KiB) imported without
# --max-size into a store on a 256 MiB filesystem: the default limit, half
# of what is free, stops it at the second file's header, long before the
# filesystem is full, and nothing is left in the store.  Root only (it
# mounts a tmpfs, unmounted at the end or by the exit trap).
SMALL=$T/small
if ! is_root; then
    skip "gzip bomb into a small filesystem" "mounting a tmpfs needs root"
elif ! { mkdir -p "$SMALL" && mount -t tmpfs -o size=256m,mode=0755 mini-test-small "$SMALL"; }; then
    skip "gzip bomb into a small filesystem" "cannot mount a tmpfs here"
else
    cleanup_cmd "umount -l '$SMALL'"
    python3 "$MKIMAGE" hostile bomb-files "$T/bomb3.tar.gz" 3
    S=$STORE
    export MINI_IMAGE_STORE=$SMALL/store
    STORE=$MINI_IMAGE_STORE
    used() { df --output=used -B1 "$SMALL" | tail -n 1 | tr -d ' '; }
    # the filesystem's use while the import runs, every 20 ms
    (while :; do used; sleep 0.02; done) >"$T/small-used" 2>/dev/null &
    sampler=$!
    BG_PIDS+=("$sampler")
    expect_import_fails "a gzip bomb without --max-size stops at the default limit (half the free space)" \
        "bytes free in the store's filesystem" "$T/bomb3.tar.gz"
    kill "$sampler" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
    check "it stopped on the limit, not on a full filesystem" test "${ERR/No space left/}" = "$ERR"
    peak=$(sort -n "$T/small-used" | tail -n 1)
    check "the filesystem never got near full during the import (peak ${peak:-?} of 268435456 bytes)" \
        test "${peak:-268435456}" -lt $((160 << 20))
    check "nothing of it is left in the store (layers, images, tmp)" \
        test -z "$(find "$STORE/layers" "$STORE/images" "$STORE/tmp" -mindepth 1 2>&1 | head -n 1)"
    check "the filesystem is nearly empty after it ($(used) bytes used)" test "$(used)" -lt $((1 << 20))
    export MINI_IMAGE_STORE=$S
    STORE=$S
    check "the tmpfs is unmounted" umount "$SMALL"
fi

finish

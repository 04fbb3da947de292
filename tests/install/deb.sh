#!/bin/bash
# The Debian package (scripts/build-deb.sh, docs/install.md): built from
# this build tree, lintian-clean apart from its justified overrides, then
# installed with apt into a fresh Debian root made by mmdebstrap (its
# dependencies resolved from Debian's archive) and used from the installed
# files only, in that root (bwrap): dpkg -L, mini-sandbox check, run
# --profile strict as root and as uid 65534, the demo, root's client
# reaching the system-wide daemon through the system units' socket.
# Root only (mmdebstrap, chroot hooks); skipped without Debian's archive.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
is_root || skip_all "building a Debian root needs root"
for t in mmdebstrap bwrap dpkg-shlibdeps cpack; do
    have "$t" || skip_all "$t is not installed (scripts/install-deps.sh)"
done
grep -q '^MINI_SANITIZE:BOOL=ON$' "$MINI_BUILD_DIR/CMakeCache.txt" &&
    skip_all "a sanitizer build is not packaged (the package is a Release artefact)"
mini_test_init "$@"

t0=$(now_ms)
run "$MINI_SOURCE_DIR/scripts/build-deb.sh" "$T/out" "$MINI_BUILD_DIR"
log "# figures: build-deb.sh $(( $(now_ms) - t0 )) ms"
DEB=$(ls "$T"/out/mini_*.deb 2>/dev/null | head -n 1)
if [[ $RC == 0 && -f $DEB ]]; then pass "build-deb.sh builds $(basename "$DEB")"; else fail "build-deb.sh builds the package"; finish; fi
expect_out "Depends: the libraries, from dpkg-shlibdeps" "libseccomp2" dpkg-deb -f "$DEB" Depends
if have lintian; then
    t0=$(now_ms)
    run lintian "$DEB"
    log "# figures: lintian $(( $(now_ms) - t0 )) ms"
    tags=$(printf '%s\n' "$OUT" "$ERR" | grep -E '^[EW]: ' || true)
    if [[ -z $tags ]]; then pass "lintian: no error or warning (overrides: packaging/debian/lintian-overrides)"
    else fail "lintian: no error or warning" "$tags"; fi
else
    skip "lintian" "not installed"
fi

ROOT=$T/root
log "# mmdebstrap: a fresh bookworm minbase root, the package installed by apt"
t0=$(now_ms)
run timeout 900 mmdebstrap --quiet --variant=minbase --include=python3 --format=directory \
    --customize-hook="copy-in $DEB /tmp" \
    --customize-hook='chroot "$1" apt-get install -y -q --no-install-recommends /tmp/'"$(basename "$DEB")" \
    --customize-hook='chroot "$1" sh -c "rm /tmp/*.deb"' \
    bookworm "$ROOT"
log "# figures: mmdebstrap and apt install $(( $(now_ms) - t0 )) ms"
if [[ $RC != 0 ]]; then
    if contains "$ERR$OUT" "Could not resolve" || contains "$ERR$OUT" "Failed to fetch" ||
        contains "$ERR$OUT" "Temporary failure"; then
        skip_all "mmdebstrap cannot reach Debian's archive"
    fi
    fail "mmdebstrap + apt install the package"
    finish
fi
pass "apt installs the package and its dependencies into a fresh Debian root"

# inroot CMD...: run CMD in the root (pivot_root by bwrap, not chroot: a
# process in a chroot may not create user namespaces).  The host's /proc,
# whole: the kernel lets a sandbox mount its own /proc only where a proc
# mount is fully visible, and bwrap's --proc covers parts of it.  So no
# pid namespace either: /proc's pids must be the processes' own.
inroot() {
    bounded bwrap --bind "$ROOT" / --bind /proc /proc --dev /dev --tmpfs /tmp --tmpfs /run --ro-bind /sys /sys \
        --ro-bind "$MINI_SOURCE_DIR/tests/install/activate.py" /opt/activate.py \
        --unshare-ipc --die-with-parent --clearenv \
        --setenv PATH /usr/sbin:/usr/bin:/sbin:/bin --setenv HOME /root --setenv LANG C.UTF-8 \
        -- /bin/sh -c "chmod 1777 /tmp; $1"
}
run inroot 'dpkg -L mini'
if [[ $RC == 0 ]] && contains "$OUT" /usr/libexec/mini/mini-sandbox-init; then
    pass "dpkg -L mini lists the installed files"
    printf '%s\n' "$OUT" | grep -v '/$' | sed 's/^/#   /' | grep -v '^#   /\.$' | grep -E '\.|/[^/]*$' | sed -n '1,80p'
else
    fail "dpkg -L mini lists the installed files"
fi
check "the AppArmor profile is shipped, and not put in place without AppArmor 4" \
    test -f "$ROOT/usr/share/mini/apparmor/mini-sandboxd" -a ! -e "$ROOT/etc/apparmor.d/mini-sandboxd"
expect_out "man mini-sandbox: the first lines" "mini-sandbox - run a command in mini's sandbox" \
    bash -c 'gzip -dc "$0" | man -l - 2>/dev/null | col -b | head -n 5' "$ROOT/usr/share/man/man1/mini-sandbox.1.gz"

run inroot 'mini-sandbox check --profile strict'
if [[ $RC == 0 || $RC == 1 ]] && contains "$OUT" strict; then pass "installed: mini-sandbox check (status $RC)"
else fail "installed: mini-sandbox check"; fi
expect_eq "installed, root: run --profile strict -- true" "ran" \
    inroot 'mkdir /tmp/ws && chown 65534:65534 /tmp/ws && cd /tmp/ws && mini-sandbox run --profile strict -- true && echo ran'
expect_eq "installed, uid 65534: run --profile strict -- true" "ran" \
    inroot 'mkdir -m 0777 /tmp/ws && cd /tmp/ws && setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/tmp mini-sandbox run --profile strict -- true && echo ran'
run inroot 'TMPDIR=/tmp /usr/share/mini/demo/run.sh'
if [[ $RC == 0 ]] && contains "$OUT" "Ran 3 tests" && contains "$OUT" "OK"; then pass "installed: the demo"
else fail "installed: the demo"; fi
# Root's client and the system units: nothing on root's own socket, so it
# tries /run/mini/sandboxd.sock, where the system socket unit listens.
# The activator and the daemon it starts are stopped by pid before the
# shell ends (bwrap has no pid namespace here, so nothing else would).
run inroot 'python3 /opt/activate.py --socket-unit /usr/lib/systemd/system/mini-sandboxd.socket \
        --service-unit /usr/lib/systemd/system/mini-sandboxd.service --ready /tmp/ready >/tmp/act.log 2>&1 &
    act=$!
    for i in $(seq 50); do [ -s /tmp/ready ] && break; sleep 0.1; done
    mkdir /tmp/ws && chown 65534:65534 /tmp/ws && cd /tmp/ws &&
    mini-sandbox run --profile strict -- echo via-system && cat /tmp/act.log
    rc=$?
    kids=$(cat /proc/$act/task/*/children 2>/dev/null)
    [ -n "$kids" ] && kill $kids
    kill $act; wait $act
    for k in $kids; do while [ -e /proc/$k ]; do sleep 0.1; done; done
    exit $rc'
if [[ $RC == 0 ]] && contains "$OUT" via-system && contains "$OUT" started; then
    pass "installed, root: the client reaches the system units' daemon on /run/mini/sandboxd.sock"
else
    fail "installed, root: the client reaches the system units' daemon on /run/mini/sandboxd.sock"
fi
check "nothing of the installed daemon is left running" \
    bash -c '! pgrep -f "^/usr/bin/mini-sandboxd|[/]opt/activate[.]py" >/dev/null'
finish

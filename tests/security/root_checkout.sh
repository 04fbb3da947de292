#!/bin/bash
# Root in a root-owned checkout (a CI job in a container): a root daemon
# runs sandboxes in a workspace that root owns.  What the sandbox creates
# there is root's on the host, so every way to leave a privileged file
# behind is attacked, in every built-in profile, and the results are
# checked on the host, not only through what the command prints:
#
#  1. the command runs as a host uid of its own (never 0); what it creates
#     is root:root on the host; root's files in the checkout are its to
#     change (it is the checkout), other users' 0600 files are not
#  2. no setuid or setgid bit: chmod, fchmod, install, open/mknod modes,
#     tar xp, cp -a of a host setuid program, a hard link to one
#  3. no file capability (security.capability) and no chown to another
#     user; on the host nothing below the checkout is set-id or carries
#     security.capability afterwards
#  4. where the sandbox would run as root itself (no user namespaces:
#     the Landlock path), the root-owned checkout is refused
#
# Root only (skips rootless).  Prints "N passed, N failed".
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"

is_root || { log "# root only: a rootless daemon's sandboxes are the user (security_workspace covers them)"; exit "$MINI_SKIP"; }
have python3 || { log "# python3 is needed for the xattr and mode checks"; exit "$MINI_SKIP"; }

TAG=$RUN_TAG
S_MIN=2146435072
start_daemon

CO=$T/checkout
mkdir -m 0755 "$CO"
echo "root-file-$TAG" >"$CO/root-file"
chmod 0644 "$CO/root-file"
# Another user's secret inside root's checkout: no owner rights for the sandbox.
echo "other-secret-$TAG" >"$CO/other-secret"
chown 65534:65534 "$CO/other-secret"
chmod 0600 "$CO/other-secret"

# co PROFILE COMMAND: one command in the checkout.
co() { bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$CO" --profile "$1" -- "$2" </dev/null; }

# A host setuid program to copy and link (passwd, su, mount: whichever is there).
SUID_PROG=
for p in /usr/bin/passwd /usr/bin/su /bin/su /usr/bin/mount /bin/mount /usr/bin/newgrp; do
    if [[ -u $p ]]; then SUID_PROG=$p; break; fi
done

# host_setid DIR: set-id files below DIR, and files with security.capability.
host_setid() {
    find "$1" -perm /6000 2>/dev/null
    python3 - "$1" <<'PY'
import os, sys
for root, dirs, files in os.walk(sys.argv[1]):
    for n in dirs + files:
        p = os.path.join(root, n)
        try:
            if "security.capability" in os.listxattr(p, follow_symlinks=False):
                print(p, "security.capability")
        except OSError:
            pass
PY
}

for prof in strict standard permissive; do
    # ---- 1. whose ids ----------------------------------------------------
    SLP=$(uniq_sleep 30)
    co "$prof" "sleep $SLP" >/dev/null 2>&1 &
    BG_PIDS+=($!)
    uid=
    if wait_until 10 has_process "sleep $SLP"; then
        pid=$(pids_by_cmdline "sleep $SLP" | head -n 1)
        uid=$(awk '/^Uid:/{print $2}' "/proc/$pid/status" 2>/dev/null || true)
        pkill -f "^sleep $SLP\$" || true
    fi
    if [[ -n $uid && $uid != 0 && $uid -ge $S_MIN ]]; then
        pass "[1] $prof: in a root-owned checkout the command runs on the host as uid $uid (not root)"
    else
        fail "[1] $prof: in a root-owned checkout the command runs on the host as a uid of its own" "host uid: '${uid}'"
    fi

    run co "$prof" "cd '$CO' && echo f >new-$prof && mkdir -p dir-$prof/sub && echo g >dir-$prof/sub/g &&
        echo changed >>root-file && cat root-file && echo made-$TAG"
    if [[ $RC == 0 ]] && contains "$OUT" "made-$TAG" && contains "$OUT" "root-file-$TAG"; then
        pass "[1] $prof: the command writes the checkout, root's files in it included"
    else
        fail "[1] $prof: the command writes the checkout, root's files in it included" "status $RC"
    fi
    bad=
    for p in "new-$prof" "dir-$prof" "dir-$prof/sub" "dir-$prof/sub/g" root-file; do
        got=$(stat -c '%u:%g' "$CO/$p" 2>/dev/null || echo missing)
        [[ $got == 0:0 ]] || bad+="$p=$got "
    done
    if [[ -z $bad ]]; then pass "[1] $prof: host: what it created and changed is root:root"
    else fail "[1] $prof: host: what it created and changed is root:root" "$bad"; fi

    run co "$prof" "$(attack_cmd "cat '$CO/other-secret'")"
    if contains "$OUT" ATTACK-FAILED && ! contains "$OUT" "other-secret-$TAG"; then
        pass "[1] $prof: another user's 0600 file in root's checkout is out of reach"
    else
        fail "[1] $prof: another user's 0600 file in root's checkout is out of reach" "$OUT"
    fi
    # (Removing it is another matter: the directory is the sandbox's to write.)
    run co "$prof" "$(attack_cmd "chmod 0644 '$CO/other-secret'")"
    check "[1] $prof: host: the other user's file keeps its owner and mode after chmod (65534:65534 0600)" \
        bash -c "[[ \$(stat -c '%u:%g:%a' '$CO/other-secret') == 65534:65534:600 ]]"

    # ---- 2. set-id bits ----------------------------------------------------
    attacks=(
        "cp /bin/sh s1-$prof && chmod 4755 s1-$prof"
        "cp /bin/sh s2-$prof && chmod u+s s2-$prof"
        "cp /bin/sh s3-$prof && chmod g+s s3-$prof"
        "mkdir s4-$prof && chmod g+s s4-$prof"
        "chmod g+s ."
        "install -m 4755 /bin/sh s5-$prof"
        "python3 -c 'import os; os.open(\"s6-$prof\", os.O_CREAT | os.O_WRONLY, 0o4755)'"
        "python3 -c 'import os; os.mknod(\"s7-$prof\", 0o2755)'"
        "python3 -c 'import os; fd = os.open(\"s8-$prof\", os.O_CREAT | os.O_WRONLY, 0o755); os.fchmod(fd, 0o6755)'"
        "python3 -c 'import io, tarfile; t = tarfile.open(\"t-$prof.tar\", \"w\"); i = tarfile.TarInfo(\"s9-$prof\"); i.mode = 0o4755; i.size = 2; t.addfile(i, io.BytesIO(b\"#!\")); t.close()' && tar xpf t-$prof.tar"
    )
    [[ -n $SUID_PROG ]] && attacks+=(
        "cp -a '$SUID_PROG' s10-$prof && test -u s10-$prof"
        "ln '$SUID_PROG' s11-$prof"
    )
    # ---- 3. file capabilities, chown ---------------------------------------
    attacks+=(
        "cp /bin/true c1-$prof && python3 -c 'import os; os.setxattr(\"c1-$prof\", \"security.capability\", bytes([1,0,0,2]) + bytes(16))'"
        "echo x >c2-$prof && chown 65534 c2-$prof"
        "echo x >c3-$prof && chown 1000:1000 c3-$prof"
    )
    for a in "${attacks[@]}"; do
        run co "$prof" "cd '$CO' && $(attack_cmd "$a")"
        if [[ $RC == 0 ]] && contains "$OUT" ATTACK-FAILED; then
            pass "[2] $prof: refused inside: $a"
        else
            fail "[2] $prof: refused inside: $a" "status $RC: $(printf '%s' "$OUT" | tail -n 3)"
        fi
    done
    left=$(host_setid "$CO")
    if [[ -z $left ]]; then
        pass "[3] $prof: host: nothing below the checkout is setuid, setgid or has a file capability"
    else
        fail "[3] $prof: host: nothing below the checkout is setuid, setgid or has a file capability" "$left"
    fi
    bad=$(find "$CO" -mindepth 1 ! -uid 0 ! -path "$CO/other-secret" -printf '%P=%u:%g ' 2>/dev/null)
    if [[ -z $bad ]]; then pass "[3] $prof: host: every file the sandbox made is root's (no chown to another user)"
    else fail "[3] $prof: host: every file the sandbox made is root's (no chown to another user)" "$bad"; fi
done

# ---- 4. no user namespaces: the sandbox would be root, refused ----------
NOUSERNS=$MINI_BIN/mini-test-nouserns
if [[ -x $NOUSERNS ]]; then
    stop_daemon || true
    DAEMON_WRAPPER=$NOUSERNS start_daemon
    run bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$CO" --profile standard -- \
        "touch '$CO/landlock-$TAG'; echo SHOULD-NOT-RUN" </dev/null
    if [[ $RC != 0 ]] && contains "$ERR" "owned by root" && ! contains "$OUT" SHOULD-NOT-RUN; then
        pass "[4] Landlock path (no user namespaces): a root-owned checkout is refused, with the reason"
    else
        fail "[4] Landlock path (no user namespaces): a root-owned checkout is refused, with the reason" \
            "status $RC, stderr: $ERR"
    fi
    check "[4] host: nothing ran there (no file appeared)" test ! -e "$CO/landlock-$TAG"
else
    skip "[4] Landlock path refuses a root-owned checkout" "no mini-test-nouserns"
fi

finish

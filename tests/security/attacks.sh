#!/bin/bash
# Security tests: each check tries to break one isolation property of the
# `strict` profile from inside the sandbox and FAILS when the attack works.
# Contract: docs/isolation.md, docs/profiles.md (strict) and
# docs/sandbox-lifecycle.md.
#
# Attacks run either as shell snippets (expect_denied) or through the C
# probe tests/security/probe.c (expect_probe), which the test copies into
# the workspace.  Positive controls (workspace writable, loopback up, unix
# and inet sockets allowed) make sure a check cannot pass just because the
# sandbox is broken in some other way.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"

HOST_NAME=$(cat /proc/sys/kernel/hostname)
TAG=$RUN_TAG

# ---- secrets and markers on the host -----------------------------------
# Secrets in the environment of the daemon and of every client call.
export OPENAI_API_KEY="sk-test-secret-openai-$TAG"
export ANTHROPIC_API_KEY="sk-test-secret-anthropic-$TAG"
export MINI_LEAK_CANARY="canary-$TAG"
SECRET_RE="sk-test-secret|canary-$TAG|OPENAI_API_KEY|ANTHROPIC_API_KEY|MINI_LEAK_CANARY|MINI_TEST_RUN_ID|MINI_BIN="

HOST_TMP_MARK=/tmp/mini-host-marker-$TAG
echo host-tmp-secret >"$HOST_TMP_MARK"
cleanup_path "$HOST_TMP_MARK"
SHM_MARK=
if [[ -d /dev/shm && -w /dev/shm ]]; then
    SHM_MARK=/dev/shm/mini-host-marker-$TAG
    echo host-shm-secret >"$SHM_MARK"
    cleanup_path "$SHM_MARK"
fi
HOME_SECRET=
if [[ -n ${HOME:-} && -d $HOME && -w $HOME ]]; then
    HOME_SECRET=$HOME/.mini-test-secret-$TAG
    echo host-home-secret >"$HOME_SECRET"
    cleanup_path "$HOME_SECRET"
fi
# In /home and /run too when we may write there (root), so that "empty"
# means "hidden" and not just "nothing there".
for d in /home /run; do
    if [[ -d $d && -w $d ]]; then
        echo secret >"$d/mini-test-secret-$TAG"
        cleanup_path "$d/mini-test-secret-$TAG"
    fi
done
# Files an attack would create on the host if it worked: removed at exit.
for p in /usr /etc / /var /bin; do
    cleanup_path "${p%/}/mini-test-$TAG"
done
cleanup_path "/etc/mini-link-$TAG" "/etc/mini-root-$TAG" "/etc/mini-init-root-$TAG" \
    "/tmp/inside-$TAG" "/dev/shm/inside-$TAG" "/sys/mini-test-$TAG"
cleanup_cmd "rmdir /sys/fs/cgroup/mini-test-$TAG /sys/fs/cgroup/*/mini-test-$TAG"

# Host listeners: TCP on all addresses, and an abstract unix socket.
LISTEN_PORT=
if have python3; then
    python3 - "$TAG" >"$T/listener.port" 2>"$T/listener.err" <<'PY' &
import socket, sys, time
tag = sys.argv[1]
tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
tcp.bind(("0.0.0.0", 0))
tcp.listen(64)
ab = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
ab.bind("\0mini-test-" + tag)
ab.listen(64)
print(tcp.getsockname()[1], flush=True)
time.sleep(900)
PY
    BG_PIDS+=("$!")
    if wait_until 10 test -s "$T/listener.port"; then
        LISTEN_PORT=$(head -n 1 "$T/listener.port")
    fi
fi
HOST_IP=$(ip -4 -o addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -n 1 || true)

# SysV shared memory on the host (ipc namespace check).
SHM_ID=
if have ipcmk; then
    SHM_ID=$(ipcmk -M 4096 2>/dev/null | grep -o '[0-9]*$' || true)
    [[ -n $SHM_ID ]] && cleanup_cmd "ipcrm -m $SHM_ID"
fi

# With SBX_IMAGE_TAR (ctest image_attacks), every attack runs in a sandbox
# rooted in that image (imported into a store of the test's own): the
# suite must pass with an image root as with the host's.
IMAGE_ROOT=
if [[ -n ${SBX_IMAGE_TAR:-} ]]; then
    [[ -s $SBX_IMAGE_TAR ]] || skip_all "no image tarball at $SBX_IMAGE_TAR (tests/image/debian.sh builds it)"
    export MINI_IMAGE_STORE=$T/store
    SBX_IMAGE=attacks:image
    run bounded "$MINI_BIN/mini-sandbox" image import -q --name "$SBX_IMAGE" "$SBX_IMAGE_TAR" </dev/null
    [[ $RC == 0 ]] || { fail "import $SBX_IMAGE_TAR" "$ERR"; finish; }
    IMAGE_ROOT=$("$MINI_BIN/mini-sandbox" image inspect --json "$SBX_IMAGE" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["rootfs"])')
    log "# every sandbox is rooted in the image $SBX_IMAGE_TAR"
fi
# What the sandbox may list in a host directory it must not see: nothing,
# or with an image root the image's own directory, never the host's.
image_ls() { [[ -z $IMAGE_ROOT ]] || ls -A "$IMAGE_ROOT$1" 2>/dev/null || true; }
IMAGE_NOTE=${IMAGE_ROOT:+" (with an image root: the image's own)"}

# The daemon starts with signals ignored, as under nohup or from a
# background job: a command must inherit none of that (the clone resets
# what the daemon ignores before it executes init).
trap '' QUIT USR2 TTOU
start_daemon
trap - QUIT USR2 TTOU
SBX_PROFILE=strict
install_probe

# ---- sanity: without isolation nothing below means anything -------------
run sbx -- 'echo "pid=$$ host=$(cat /proc/sys/kernel/hostname)"'
if [[ $RC == 0 && $OUT =~ pid=([0-9]+)\ host=(.*) ]] &&
   (( BASH_REMATCH[1] <= 3 )) && [[ ${BASH_REMATCH[2]} != "$HOST_NAME" ]]; then
    pass "sanity: the command runs isolated (${BASH_REMATCH[0]})"
else
    fail "sanity: the command runs isolated" "expected pid <= 3 and a hostname other than $HOST_NAME"
    log "# the sandbox does not run or does not isolate: the other checks would mean nothing; stopping"
    finish
fi

# ---- descriptors, credentials, seccomp ---------------------------------
expect_probe "only fds 0, 1, 2 are open in the command" fds
run sbx -- 'grep -E "^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp|SigIgn):" /proc/self/status'
if [[ $RC == 0 && $OUT == *"SigIgn:	0000000000000000"* ]]; then pass "no signal is ignored (the daemon's ignored ones are reset)"
else fail "no signal is ignored (the daemon's ignored ones are reset)" "$OUT"; fi
for f in CapInh CapPrm CapEff CapBnd CapAmb; do
    if [[ $RC == 0 && $OUT == *"$f:	0000000000000000"* ]]; then pass "$f is 0"
    else fail "$f is 0"; fi
done
if [[ $RC == 0 && $OUT == *"NoNewPrivs:	1"* ]]; then pass "NoNewPrivs is 1"; else fail "NoNewPrivs is 1"; fi
if [[ $RC == 0 && $OUT == *"Seccomp:	2"* ]]; then pass "a seccomp filter is installed (Seccomp: 2)"
else fail "a seccomp filter is installed (Seccomp: 2)"; fi

# ---- terminal injection -------------------------------------------------
expect_probe "TIOCSTI/TIOCLINUX are stopped by seccomp (also with high bits set)" tiocsti
if have script; then
    cmd=$(printf '%q ' "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$WS" \
        --profile strict -- "$PROBE" tiocsti-fds)
    run bounded script -qec "$cmd" /dev/null </dev/null
    if [[ $RC == 0 ]] && contains "$OUT" PROBE-DONE && ! contains "$OUT" BREACH; then
        pass "TIOCSTI on fds 0-2 fails when the client runs on a terminal"
    else
        fail "TIOCSTI on fds 0-2 fails when the client runs on a terminal"
    fi
else
    skip "TIOCSTI on fds 0-2 under a terminal" "script(1) not installed"
fi

# ---- dangerous syscalls ------------------------------------------------
expect_probe "ptrace of a sibling, of pid 1, and TRACEME fail" ptrace
expect_probe "keyctl and add_key fail" keyctl
expect_probe "bpf fails" bpf
expect_probe "io_uring_setup fails" io_uring
expect_probe "perf_event_open, userfaultfd, open_by_handle_at fail" misc
expect_probe "new namespaces via unshare, clone and clone3 fail" userns
expect_probe "setns fails" setns
mkdir -p "$WS/mnt"
expect_probe "mount, bind mount, fsopen, open_tree, chroot fail" mount "$WS/mnt"
expect_probe "i386 and x32 syscall entry points cannot bypass the filter" x86-abi
expect_probe "socket families other than unix/inet/inet6 fail" sockets
run sbx -- "$PROBE" sockets-allowed
if [[ $RC == 0 ]] && contains "$OUT" PROBE-DONE; then pass "control: unix and inet sockets can be created"
else fail "control: unix and inet sockets can be created"; fi
expect_denied "unshare -U true" 'unshare -U true'
expect_denied "unshare -r (map root) true" 'unshare -r true'
expect_denied "unshare -m true" 'unshare -m true'
expect_denied "unshare -n true" 'unshare -n true'
expect_denied "mount -t tmpfs" "mkdir -p '$WS/mnt2' && mount -t tmpfs none '$WS/mnt2'"
check "no mount made in the sandbox appears on the host" \
    bash -c '! grep -qF -- "$1/mnt" /proc/self/mounts' _ "$WS"

# ---- filesystem: read-only root, private /tmp, hidden host paths ----------
expect_denied "touch /usr/x" "touch /usr/mini-test-$TAG"
expect_denied "touch /etc/x" "touch /etc/mini-test-$TAG"
expect_denied "touch /x" "touch /mini-test-$TAG"
expect_denied "touch /var/x" "touch /var/mini-test-$TAG"
expect_denied "touch /bin/x" "touch /bin/mini-test-$TAG"
expect_denied "remount / read-write" 'mount -o remount,rw / || mount -o remount,bind,rw /'
check "no attack left a file in /usr, /etc, /, /var, /bin" \
    bash -c 'for d in /usr /etc "" /var /bin; do test ! -e "$d/mini-test-$1" || exit 1; done' _ "$TAG"
expect_allowed "control: the workspace is writable" "echo w >'$WS/ws-write' && test \"\$(cat '$WS/ws-write')\" = w"
expect_allowed "control: /tmp is writable" "echo t >/tmp/inside-$TAG && cat /tmp/inside-$TAG"
expect_denied "/tmp is fresh for every command" "test -e /tmp/inside-$TAG"
check "/tmp writes do not reach the host's /tmp" test ! -e "/tmp/inside-$TAG"
expect_denied "the host's /tmp is not visible" "cat '$HOST_TMP_MARK'"
# Inside, /tmp holds nothing but the path down to the workspace (when the
# workspace is itself under /tmp).
want_tmp=
if [[ $WS == /tmp/* ]]; then
    want_tmp=${WS#/tmp/}
    want_tmp=${want_tmp%%/*}
fi
expect_eq "/tmp inside is empty (but for the way to the workspace)" "$want_tmp" sbx -- 'ls -A /tmp'
if [[ -n $SHM_MARK ]]; then
    expect_denied "the host's /dev/shm is not visible" "cat '$SHM_MARK'"
fi
run sbx -- "echo s >/dev/shm/inside-$TAG"
check "/dev/shm writes do not reach the host" test ! -e "/dev/shm/inside-$TAG"
if [[ -n $HOME_SECRET ]]; then
    expect_denied "the host user's home directory is not readable" "cat '$HOME_SECRET'"
else
    skip "the host user's home directory is not readable" "no writable \$HOME"
fi
expect_eq "/root is empty or absent$IMAGE_NOTE" "$(image_ls /root)" sbx -- 'ls -A /root 2>/dev/null; true'
expect_eq "/home is empty or absent$IMAGE_NOTE" "$(image_ls /home)" sbx -- 'ls -A /home 2>/dev/null; true'
expect_eq "/run is empty or absent$IMAGE_NOTE" "$(image_ls /run)" sbx -- 'ls -A /run 2>/dev/null; true'
expect_denied "the daemon's socket path is not visible" "test -e '$SOCK'"
expect_denied "the daemon's state directory is not visible" "test -e '$T/state'"
expect_probe "the daemon's socket cannot be connected to" connect-unix "$SOCK"

# A workspace that contains the daemon's socket (a user running in /tmp or
# in their home, where the default socket lives): the command must not be
# able to talk to the daemon, or it could ask for a looser sandbox.
run bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$T" --profile strict -- \
    "$PROBE" connect-unix "$SOCK"
if [[ $RC == 125 ]] || { [[ $RC == 0 ]] && contains "$OUT" PROBE-DONE && ! contains "$OUT" BREACH; }; then
    pass "a workspace holding the daemon's socket does not give the command the daemon (refused, or unreachable)"
else
    fail "a workspace holding the daemon's socket does not give the command the daemon (refused, or unreachable)"
fi

# ---- symlinks and /proc tricks -------------------------------------------
ln -sfn /etc "$WS/etc-link"
expect_denied "write through a workspace symlink to /etc" "echo x >'$WS/etc-link/mini-link-$TAG'"
check "the symlink write did not reach the host's /etc" test ! -e "/etc/mini-link-$TAG"
expect_denied "write via /proc/self/root" "echo x >/proc/self/root/etc/mini-root-$TAG"
expect_denied "write via /proc/1/root" "echo x >/proc/1/root/etc/mini-init-root-$TAG"
check "/proc/*/root writes did not reach the host's /etc" \
    test ! -e "/etc/mini-root-$TAG" -a ! -e "/etc/mini-init-root-$TAG"
expect_denied "write /proc/sys (core_pattern, same value)" \
    'cat /proc/sys/kernel/core_pattern >/proc/sys/kernel/core_pattern'
expect_denied "write /sys or create a cgroup" \
    "touch /sys/mini-test-$TAG 2>/dev/null || { for d in /sys/fs/cgroup /sys/fs/cgroup/*/; do mkdir \"\$d/mini-test-$TAG\" 2>/dev/null && exit 0; done; exit 1; }"
expect_probe "pid 1's memory does not hold the daemon's secrets" memscan 1 "sk-test-secret"
# The cgroup namespace is rooted at the command's own cgroup: the command
# learns nothing of the daemon's or the host's cgroup tree from it.
expect_eq "cgroup namespace: /proc/self/cgroup names no path above the command's" "" \
    sbx -- "grep -v ':/\$' /proc/self/cgroup || true"

# ---- cwd validation -----------------------------------------------------
ln -sfn ../../.. "$WS/up-link"
mkdir -p "$WS/sub"
if [[ -z $IMAGE_ROOT ]]; then
    expect_refused "--cwd /etc is refused" sbx --cwd /etc -- 'echo SHOULD-NOT-RUN'
else
    # The image's directories are the sandbox's own (docs/images.md): the
    # image's /etc, never the host's; a host directory it lacks is refused.
    expect_eq "--cwd /etc is the image's /etc" "$(ls -A "$IMAGE_ROOT/etc" | head -5)" sbx --cwd /etc -- 'ls -A | head -5'
    expect_refused "--cwd to a host directory the image lacks is refused" sbx --cwd "$T/state" -- 'echo SHOULD-NOT-RUN'
fi
expect_refused "--cwd WS/../.. is refused" sbx --cwd "$WS/../.." -- 'echo SHOULD-NOT-RUN'
expect_refused "--cwd WS/sub/../../.. is refused" sbx --cwd "$WS/sub/../../.." -- 'echo SHOULD-NOT-RUN'
expect_refused "--cwd /proc/self/fd/3 is refused" sbx --cwd /proc/self/fd/3 -- 'echo SHOULD-NOT-RUN'
expect_refused "--cwd /proc/self/cwd is refused" sbx --cwd /proc/self/cwd -- 'echo SHOULD-NOT-RUN'
expect_refused "--cwd symlink in the workspace to /etc is refused" sbx --cwd "$WS/etc-link" -- 'echo SHOULD-NOT-RUN'
expect_refused "--cwd relative symlink leaving the workspace is refused" sbx --cwd "$WS/up-link" -- 'echo SHOULD-NOT-RUN'
check "the daemon still answers after the refusals" ping_ok

# cwd race: flip WS/race between a directory and a symlink to a host-only
# directory while commands start with --cwd WS/race.  A daemon that checks
# the path and later follows it again (or enters it before the sandbox's
# root is in place) would start a command inside the host directory.
if have python3; then
    mkdir -p "$T/race-target"
    touch "$T/race-target/host-only-marker"
    python3 - "$WS/race" "$T/race-target" <<'PY' >/dev/null 2>&1 &
import ctypes, os, sys, time
link, target = sys.argv[1], sys.argv[2]
alt = link + "-alt"
os.mkdir(link)
os.symlink(target, alt)
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
end = time.time() + 120
# Swap the directory and the symlink atomically, so that WS/race always
# exists and is a directory half of the time.
while time.time() < end:
    if libc.renameat2(AT_FDCWD, link.encode(), AT_FDCWD, alt.encode(), RENAME_EXCHANGE) != 0:
        os.rename(link, link + "-tmp"); os.rename(alt, link); os.rename(link + "-tmp", alt)
PY
    flipper=$!
    BG_PIDS+=("$flipper")
    race_breach=0 race_ran=0 race_refused=0 race_other=0
    for i in $(seq 1 40); do
        run sbx --cwd "$WS/race" -- 'if [ -e host-only-marker ]; then echo RACE-BREACH; fi; pwd -P'
        if contains "$OUT" RACE-BREACH; then race_breach=$((race_breach + 1))
        elif [[ $RC == 0 ]]; then race_ran=$((race_ran + 1))
        elif [[ $RC == 125 ]]; then race_refused=$((race_refused + 1))
        else race_other=$((race_other + 1)); fi
    done
    kill -KILL "$flipper" 2>/dev/null || true
    wait "$flipper" 2>/dev/null || true
    RC=0 OUT= ERR=
    if (( race_breach == 0 && race_other == 0 )); then
        pass "cwd race (dir/symlink flip): no command started outside the sandbox ($race_ran ran, $race_refused refused)"
    else
        fail "cwd race (dir/symlink flip): no command started outside the sandbox" \
            "$race_breach started in the host directory, $race_other ended otherwise, $race_ran ran, $race_refused refused"
    fi
fi

# ---- processes -----------------------------------------------------------
run sbx -- 'ls /proc | grep -c "^[0-9][0-9]*$"'
if [[ $RC == 0 && $OUT =~ ^[0-9]+$ ]] && (( OUT <= 6 )); then
    pass "/proc shows only the sandbox's processes ($OUT)"
else
    fail "/proc shows only the sandbox's processes" "expected at most 6 pids"
fi
DPID=${DAEMON_PID:-0}
if (( DPID > 100 )); then
    expect_denied "the daemon's pid is not visible in /proc" "test -e /proc/$DPID"
    expect_denied "kill -0 the daemon" "kill -0 $DPID"
fi
if (( $$ > 100 )); then
    expect_denied "kill -0 the test process" "kill -0 $$"
fi

# ---- another sandbox running at the same time ------------------------------
S_A=$(uniq_sleep 61)
sbx -- "echo a >/tmp/xs-$TAG; sleep $S_A" >/dev/null 2>&1 &
a_pid=$!
BG_PIDS+=("$a_pid")
if wait_until 10 has_process "sleep $S_A"; then
    expect_denied "another sandbox's /tmp is not visible" "test -e /tmp/xs-$TAG"
    expect_denied "another sandbox's processes are not visible" \
        "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' <\"\$f\" | grep -q 'slee[p] $S_A' && exit 0; done; exit 1"
    if is_root; then
        uids=$(for p in $(pids_by_cmdline "sleep $S_A"); do ps -o uid= -p "$p"; done | tr -d ' ' | sort -u | tr '\n' ' ')
        if [[ -n $uids && " $uids" != *" 0 "* ]]; then
            pass "a root daemon runs commands as an unprivileged host uid ($uids)"
        else
            fail "a root daemon runs commands as an unprivileged host uid" "host uids of the sandboxed sleep: '$uids'"
        fi
    fi
else
    fail "another sandbox running at the same time" "sleep $S_A did not start"
fi
for p in $(client_pids "sleep $S_A"); do kill -KILL "$p" 2>/dev/null || true; done
wait_pid "$a_pid" 10 || true

# ---- ipc and uts -----------------------------------------------------------
if [[ -n $SHM_ID ]]; then
    expect_eq "the host's SysV shared memory is not visible" "0" \
        sbx -- 'tail -n +2 /proc/sysvipc/shm | wc -l'
else
    skip "the host's SysV shared memory is not visible" "could not create a segment (ipcmk)"
fi
prof_host=
if [[ -f $MINI_SOURCE_DIR/profiles/strict.json ]] && have python3; then
    prof_host=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("hostname") or "")' \
        "$MINI_SOURCE_DIR/profiles/strict.json" 2>/dev/null || true)
fi
if [[ -n $prof_host ]]; then
    expect_eq "the hostname is the profile's ($prof_host)" "$prof_host" sbx -- 'cat /proc/sys/kernel/hostname'
else
    expect_no_out "the hostname is not the host's" "$HOST_NAME" sbx -- 'echo "[$(cat /proc/sys/kernel/hostname)]"'
fi
expect_denied "setting the hostname fails" \
    "hostname mini-evil-$TAG 2>/dev/null || echo mini-evil-$TAG >/proc/sys/kernel/hostname"
check "the host's hostname is unchanged" test "$(cat /proc/sys/kernel/hostname)" = "$HOST_NAME"

# ---- /dev and /sys ----------------------------------------------------------
run sbx -- 'ls -A /dev'
allowed=" null zero full random urandom tty pts ptmx shm fd stdin stdout stderr core mqueue "
extra=
for e in $OUT; do
    [[ $allowed == *" $e "* ]] || extra+="$e "
done
if [[ $RC == 0 && -n $OUT && -z $extra ]]; then
    pass "/dev holds only the minimal set ($(echo $OUT))"
else
    fail "/dev holds only the minimal set" "unexpected entries: ${extra:-none}"
fi
expect_denied "no block devices in /dev" '[ -n "$(find /dev -type b 2>/dev/null)" ]'
expect_eq "/sys/class/net shows at most lo" "" sbx -- 'ls /sys/class/net 2>/dev/null | grep -vx lo; true'

# ---- network -------------------------------------------------------------
expect_eq "/proc/net/dev lists only lo" "lo" sbx -- "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"
run sbx -- "$PROBE" loopback
if [[ $RC == 0 ]] && contains "$OUT" PROBE-DONE; then pass "control: loopback is up inside"
else fail "control: loopback is up inside"; fi
expect_denied "DNS lookups fail" 'getent hosts example.com'
if [[ -n $LISTEN_PORT ]]; then
    # Control: the listener is reachable from the host itself.
    run "$MINI_BIN/mini-test-probe" connect-tcp 127.0.0.1 "$LISTEN_PORT"
    if contains "$OUT" "BREACH"; then
        expect_probe "a TCP listener on the host's loopback is unreachable" connect-tcp 127.0.0.1 "$LISTEN_PORT"
        if [[ -n $HOST_IP ]]; then
            expect_probe "a TCP listener on the host's address $HOST_IP is unreachable" connect-tcp "$HOST_IP" "$LISTEN_PORT"
        fi
        expect_probe "an abstract unix socket of the host is unreachable" connect-abstract "mini-test-$TAG"
        # --network host must not loosen strict: refused, or still no network.
        run sbx --network host -- "$PROBE" connect-tcp 127.0.0.1 "$LISTEN_PORT"
        if [[ $RC == 125 ]] || { [[ $RC == 0 ]] && contains "$OUT" PROBE-DONE && ! contains "$OUT" BREACH; }; then
            pass "--network host cannot loosen strict (refused or still isolated)"
        else
            fail "--network host cannot loosen strict (refused or still isolated)"
        fi
    else
        fail "network checks: control connection from the host to the listener failed (test setup)"
    fi
else
    skip "network reachability checks" "no host listener (python3 missing?): $(cat "$T/listener.err" 2>/dev/null)"
fi

# ---- environment -----------------------------------------------------------
run sbx -- 'env; for f in /proc/[0-9]*/environ; do tr "\0" "\n" <"$f"; done 2>/dev/null; true'
if [[ $RC == 0 && $OUT == *PATH=* ]] && ! grep -qE "$SECRET_RE" <<<"$OUT"; then
    pass "API keys and host variables do not reach the command (env, /proc/*/environ)"
else
    fail "API keys and host variables do not reach the command (env, /proc/*/environ)" \
        "leaked: $(grep -oE "$SECRET_RE" <<<"$OUT" | sort -u | tr '\n' ' ')"
fi
expect_eq "--env FOO=bar passes FOO" "bar" sbx --env FOO=bar -- 'echo "$FOO"'
expect_eq "HOME is /tmp" "/tmp" sbx -- 'echo "$HOME"'

# ---- limits ------------------------------------------------------------------
pids_limit=$(profile_limit strict pids 0)
nproc_try=4096
if (( pids_limit > 0 && pids_limit + 64 < nproc_try )); then nproc_try=$((pids_limit + 64)); fi
expect_probe "a fork bomb is contained (cannot create $nproc_try processes)" nproc "$nproc_try"
mem_limit=$(profile_limit strict memory 0)
mem_try=4096
if (( mem_limit > 0 && mem_limit / 1048576 + 256 < mem_try )); then mem_try=$((mem_limit / 1048576 + 256)); fi
run sbx -- "$PROBE" mem "$mem_try"
if ! contains "$OUT" BREACH && { [[ $RC == 0 ]] && contains "$OUT" DENIED || [[ $RC == 137 ]]; }; then
    pass "memory is limited (cannot use $mem_try MiB)"
else
    fail "memory is limited (cannot use $mem_try MiB)"
fi

check "the daemon survived every attack" ping_ok
finish

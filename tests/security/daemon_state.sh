#!/bin/bash
# Attack tests for what the daemon keeps and shares:
# - permissive shares the host's network namespace: the host's abstract
#   Unix sockets must not be reachable (Landlock scope, ABI 6+);
# - overlays left by a dead daemon are removed when a daemon starts, so
#   that they neither stay on the disk nor trip a daemon with the same pid.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
TAG=$RUN_TAG
if is_root; then
    # An ordinary user's workspace, as a project would be.
    chown 65534:65534 "$WS"
fi

# ---- a dead daemon's overlay, planted before the daemon starts ---------
sh -c 'exit 0' &
dead=$!
wait "$dead" || true
stale=$T/state/sessions/$dead-s1
mkdir -p "$stale/upper/usr/local/lib" "$stale/work/1"
echo leftover >"$stale/upper/usr/local/lib/file"

start_daemon

if [[ -e $stale ]]; then
    fail "a dead daemon's overlay is removed at start" "$stale is still there"
else
    pass "a dead daemon's overlay is removed at start"
fi

# A private daemon (no daemon listening) sweeps after its client's hello
# and open: by the time `run` has returned, the overlay is gone too.
prt=$(mktemp -d "$T/private-rt.XXXXXX")
mkdir -m 0700 "$prt/mini" "$prt/mini/state"
pstale=$prt/mini/state/sessions/$dead-s1
mkdir -p "$pstale/upper/usr/local/lib" "$pstale/work/1"
echo leftover >"$pstale/upper/usr/local/lib/file"
XDG_RUNTIME_DIR=$prt run bounded "$MINI_BIN/mini-sandbox" run --profile strict --workspace "$WS" -- true
if [[ $RC == 0 && ! -e $pstale ]]; then
    pass "a private daemon removes a dead daemon's overlay"
else
    fail "a private daemon removes a dead daemon's overlay" "status $RC, $(ls -d "$pstale" 2>&1): $ERR"
fi

# ---- abstract sockets under permissive ----------------------------------
have python3 || skip_all "python3 is needed for the socket checks"
python3 - "$TAG" >"$T/abs.ready" 2>"$T/abs.err" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0mini-abs-" + sys.argv[1])
s.listen(8)
print("ready", flush=True)
time.sleep(120)
PY
BG_PIDS+=("$!")
wait_until 10 test -s "$T/abs.ready" || fail "abstract listener" "$(cat "$T/abs.err")"

SBX_PROFILE=permissive
abi=$(python3 - <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
# landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
print(libc.syscall(444, None, 0, 1))
PY
)
connect_host="python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"\\0mini-abs-$TAG\")'"
if (( abi >= 6 )); then
    expect_denied "permissive: the host's abstract sockets are out of reach" "$connect_host"
else
    skip "permissive: abstract sockets" "scoped only with Landlock ABI 6+ (this kernel: $abi)"
fi
expect_allowed "permissive: abstract sockets made inside still work" \
    "python3 -c 'import socket; a=socket.socket(socket.AF_UNIX); a.bind(\"\\0inner-$TAG\"); a.listen(1); b=socket.socket(socket.AF_UNIX); b.connect(\"\\0inner-$TAG\")'"
SBX_PROFILE=strict
expect_denied "strict: the host's abstract sockets are out of reach" "$connect_host"

# ---- covers of hidden files -------------------------------------------
SBX_PROFILE=strict
run sbx -- 'grep " /etc/shadow " /proc/self/mountinfo'
if [[ $RC == 0 ]] && [[ $OUT == *nosuid* && $OUT == *nodev* && $OUT == *noexec* && $OUT == *" ro,"* ]]; then
    pass "the cover of a hidden file is ro,nosuid,nodev,noexec"
else
    fail "the cover of a hidden file is ro,nosuid,nodev,noexec" "$OUT $ERR"
fi
expect_denied "a hidden file cannot be written" 'echo x > /etc/shadow'
expect_denied "a hidden file gives nothing to read" 'test -n "$(cat /etc/shadow)"'

# ---- per-user kernel quotas: inotify ------------------------------------
# A sandbox grabs every inotify instance it can and holds them; meanwhile a
# host process of the test's own uid (the sandbox's own uid when rootless)
# must still get one.
grab='import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
n = 0
while n < 100000 and libc.inotify_init1(0) >= 0:
    n += 1
print("held", n, flush=True)
time.sleep(float(sys.argv[1]))'
SBX_PROFILE=strict
sbx -- python3 -c "$grab" 6 >"$T/grab.out" 2>&1 &
grab_pid=$!
BG_PIDS+=("$grab_pid")
wait_until 15 grep -q held "$T/grab.out" || true
host_ok=$(python3 -c 'import ctypes; print(ctypes.CDLL(None).inotify_init1(0) >= 0)')
wait "$grab_pid" || true
held=$(awk '/held/ {print $2}' "$T/grab.out")
if [[ -n $held && $held -le 16 ]]; then pass "a sandbox holds at most 16 inotify instances (held $held)"
else fail "a sandbox holds at most 16 inotify instances" "held ${held:-?}: $(head -c 300 "$T/grab.out")"; fi
if [[ $host_ok == True ]]; then pass "the host uid still gets an inotify instance while a sandbox holds its share"
else fail "the host uid still gets an inotify instance while a sandbox holds its share" "inotify_init1 failed on the host"; fi

# ---- a second daemon must not sweep a live daemon's cgroups ----------------
# Daemon B starts in a pid namespace of its own, where daemon A's pid does
# not exist, while A's parent group is empty between commands.
a_groups() { find /sys/fs/cgroup/memory -maxdepth 8 -type d -name "mini-sandboxd-$DAEMON_PID" 2>/dev/null | head -n 1; }
if is_root && [[ -n $(a_groups) ]] && have unshare; then
    SBX_PROFILE=strict
    expect_eq "daemon A runs a command before B starts" "a1" sbx -- echo a1
    b=$(mktemp -d /tmp/mini-second.XXXXXX)
    cleanup_path "$b"
    mkdir -m 0700 "$b/run" "$b/state"
    unshare --pid --fork "$MINI_BIN/mini-sandboxd" --socket "$b/run/sock" --state-dir "$b/state" --foreground \
        >"$T/second.log" 2>&1 </dev/null &
    bpid=$!
    BG_PIDS+=("$bpid")
    wait_until 10 test -S "$b/run/sock" || true
    if [[ -n $(a_groups) ]]; then pass "daemon A's cgroup survives a second daemon's start-up sweep"
    else fail "daemon A's cgroup survives a second daemon's start-up sweep" "gone; B's log: $(cat "$T/second.log")"; fi
    expect_eq "daemon A still runs commands after B started" "a2" sbx -- echo a2
    kill "$bpid" 2>/dev/null || true
    wait_pid "$bpid" 10 || true
else
    skip "a second daemon's sweep" "needs root and cgroup v1 memory groups"
fi

stop_daemon || true
finish

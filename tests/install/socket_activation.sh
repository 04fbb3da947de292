#!/bin/bash
# Socket activation (packaging/systemd/, docs/install.md): mini-sandboxd
# started the way systemd starts it from mini-sandboxd.socket and .service
# (tests/install/activate.py reads the units, holds the listening socket,
# starts the daemon on the first connection with LISTEN_FDS/LISTEN_PID).
# mini-sandbox and mini find it on the default socket without starting a
# private daemon; the daemon leaves the socket to its owner when it stops
# and the next connection starts it again; the passed socket does not reach
# a sandbox; wrong LISTEN_* are refused or ignored as systemd's protocol
# says.  As root and rootless.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
UNITS=$MINI_SOURCE_DIR/packaging/systemd
ACTIVATE=$MINI_SOURCE_DIR/tests/install/activate.py
export XDG_RUNTIME_DIR=$T/xdg
mkdir -m 0700 "$XDG_RUNTIME_DIR"
AUDIT=$T/audit.jsonl
ACT_LOG=$T/activate.log
ACT_PID=
cleanup_cmd 'if [[ -n $ACT_PID ]]; then kill -TERM $ACT_PID 2>/dev/null; wait_pid $ACT_PID 10 >/dev/null || true; fi'

# activate KIND [EXTRA DAEMON ARGS]: the units of KIND (user or system) with
# their socket under $T (the system unit's /run/mini would be the machine's)
# and the daemon's extra arguments appended to ExecStart=.
activate() {
    local kind=$1
    shift
    sed -e "s|^ListenStream=/run/|ListenStream=$XDG_RUNTIME_DIR/|" "$UNITS/$kind/mini-sandboxd.socket" >"$T/$kind.socket"
    sed -e "s|@CMAKE_INSTALL_FULL_BINDIR@|/usr/bin|" -e "/^ExecStart=/s|\$| $*|" \
        "$UNITS/$kind/mini-sandboxd.service.in" >"$T/$kind.service"
    rm -f "$T/ready"
    python3 "$ACTIVATE" --socket-unit "$T/$kind.socket" --service-unit "$T/$kind.service" \
        --bin-dir "$MINI_BIN" --ready "$T/ready" >"$ACT_LOG" 2>&1 </dev/null &
    ACT_PID=$!
    wait_until 10 test -s "$T/ready" || { fail "$kind units: the harness listens" "$(cat "$ACT_LOG")"; finish; }
    ASOCK=$(cat "$T/ready")
}
deactivate() {
    kill -TERM "$ACT_PID" 2>/dev/null || true
    wait_pid "$ACT_PID" 15 >/dev/null || true
    ACT_PID=
}
starts() { grep -c '^started' "$ACT_LOG" || true; }
# expect_err NAME STATUS TEXT CMD...: CMD exits STATUS with TEXT on stderr.
expect_err() {
    local name=$1 want=$2 text=$3
    shift 3
    run "$@"
    if [[ $RC == "$want" ]] && contains "$ERR" "$text"; then pass "$name"
    else fail "$name" "expected status $want and stderr containing: $text"; fi
}
daemon_pid() { sed -n 's/^started //p' "$ACT_LOG" | tail -n 1; }

profiles=()
mapfile -t profiles < <(mini_profiles_args)
activate user --audit-log "$AUDIT" "${profiles[@]}"
expect_eq "user units: the socket is $XDG_RUNTIME_DIR/mini/sandboxd.sock, where clients look" \
    "$XDG_RUNTIME_DIR/mini/sandboxd.sock" echo "$ASOCK"
expect_eq "user units: socket 0600 in a 0700 directory (SocketMode=, DirectoryMode=)" "600 700" \
    bash -c 'echo $(stat -c %a "$0" "$(dirname "$0")")' "$ASOCK"
check "user units: nothing started before the first connection" test "$(starts)" = 0

expect_eq "mini-sandbox run without --socket reaches the activated daemon" "activated-$RUN_TAG" \
    bounded "$MINI_BIN/mini-sandbox" run --profile strict --workspace "$WS" -- echo "activated-$RUN_TAG"
check "the daemon was started once, by the harness" test "$(starts)" = 1
expect_out "its audit log has the command: no private daemon ran it" "activated-$RUN_TAG" cat "$AUDIT"
expect_out "ping without --socket answers from the same daemon" "" \
    bounded "$MINI_BIN/mini-sandbox" ping
check "still one daemon start" test "$(starts)" = 1

# mini (the agent) finds it too.
SUBMIT='echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; echo "agent-'$RUN_TAG'"'
outputs=$(python3 -c 'import json,sys; print(json.dumps(["THOUGHT: done.\n\n```mswea_bash_command\n" + sys.argv[1] + "\n```"]))' "$SUBMIT")
run env HOME="$T" MSWEA_GLOBAL_CONFIG_DIR="$T/cfg" timeout -k 5 60 "$MINI_BIN/mini" -y --exit-immediately \
    -c mini_textbased --model-class deterministic -l 0 --sandbox strict --workspace "$WS" -t task \
    -o "$T/traj.json" -c "model.outputs=$outputs"
if [[ $RC == 0 ]] && grep -q "agent-$RUN_TAG" "$AUDIT"; then
    pass "mini's command ran in the activated daemon (its audit log)"
else
    fail "mini's command ran in the activated daemon (its audit log)" "$(tail -n 3 "$AUDIT")"
fi
check "still one daemon start after mini" test "$(starts)" = 1

# The passed socket stays the harness's: not visible in a sandbox, not an
# open fd of the command, never in its environment.
SBX_PROFILE=strict
SOCK=$ASOCK
expect_denied "inside: reach the activation socket's path" "test -e '$ASOCK'"
expect_denied "inside: connect to the activation socket" \
    "python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' '$ASOCK'"
expect_denied "inside: find the passed socket among the fds" \
    'for f in /proc/self/fd/*; do [ "$(readlink $f)" != "${f#/proc/self/fd/}" ] && readlink $f; done | grep -q socket'
expect_denied "inside: read a LISTEN_ variable" 'env | grep ^LISTEN_'
dpid=$(daemon_pid)
cloexec() { python3 -c 'import sys; f = open(sys.argv[1]).read().split("flags:")[1].split()[0]; sys.exit(0 if int(f, 8) & 0o2000000 else 1)' "$1"; }
check "host: the daemon holds the passed socket as fd 3, close-on-exec" cloexec "/proc/$dpid/fdinfo/3"

# SIGTERM: the daemon exits 0 and leaves the socket; the next connection
# starts it again.
kill -TERM "$dpid"
wait_until 10 grep -q "^exited $dpid" "$ACT_LOG" || true
expect_out "SIGTERM: the daemon exits 0" "exited $dpid 0" cat "$ACT_LOG"
check "SIGTERM: the socket is left to its owner" test -S "$ASOCK"
expect_eq "the next connection starts the daemon again" "again-$RUN_TAG" \
    bounded "$MINI_BIN/mini-sandbox" run --profile strict --workspace "$WS" -- echo "again-$RUN_TAG"
check "two starts in all" test "$(starts)" = 2
deactivate
check "RemoveOnStop: the socket is gone with the harness" test ! -e "$ASOCK"

# The system-wide units serve the same way (their socket moved under $T).
activate system "${profiles[@]}"
expect_eq "system units: the daemon serves the socket" "system-$RUN_TAG" \
    bounded "$MINI_BIN/mini-sandbox" run --socket "$ASOCK" --profile strict --workspace "$WS" -- echo "system-$RUN_TAG"
deactivate

# The protocol's edge cases.
d=$MINI_BIN/mini-sandboxd
expect_err "LISTEN_FDS=2: refused" 1 "serves exactly one socket" \
    bash -c 'LISTEN_PID=$$ LISTEN_FDS=2 exec "$0" --state-dir "$1" 3</dev/null' "$d" "$T/state"
expect_err "fd 3 not a socket: refused" 1 "fd 3 is not a socket" \
    bash -c 'LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" --state-dir "$1" 3</dev/null' "$d" "$T/state"
expect_err "LISTEN_FDS not a number: refused" 1 "not a number" \
    bash -c 'LISTEN_PID=$$ LISTEN_FDS=x exec "$0" --state-dir "$1"' "$d" "$T/state"
expect_err "a socket that does not listen: refused" 1 "not a listening Unix stream socket" python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])
if s.fileno() != 3: os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS="1")
os.execv(sys.argv[2], [sys.argv[2], "--state-dir", sys.argv[3]])' "$T/bound.sock" "$d" "$T/state"
expect_err "--socket with LISTEN_FDS: a usage error" 2 "passed by LISTEN_FDS" python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1)
if s.fileno() != 3: os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS="1")
os.execv(sys.argv[2], [sys.argv[2], "--socket", sys.argv[1] + ".other", "--state-dir", sys.argv[3]])' \
    "$T/listening.sock" "$d" "$T/state"
# LISTEN_PID of another process: not ours, ignored (the daemon binds its own).
mkdir -m 0700 "$T/own"
LISTEN_PID=1 LISTEN_FDS=1 "$d" --socket "$T/own/sock" --state-dir "$T/state" --foreground "${profiles[@]}" \
    >"$T/own.log" 2>&1 </dev/null &
own=$!
own_ping() { timeout 5 "$MINI_BIN/mini-sandbox" ping --socket "$T/own/sock" >/dev/null 2>&1 </dev/null; }
if wait_until 10 own_ping; then
    pass "LISTEN_PID of another process: ignored, the daemon binds --socket"
else
    fail "LISTEN_PID of another process: ignored, the daemon binds --socket" "$(cat "$T/own.log")"
fi
kill -TERM "$own" 2>/dev/null || true
wait_pid "$own" 10 >/dev/null || true
finish

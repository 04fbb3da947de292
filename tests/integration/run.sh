#!/bin/bash
# Integration tests for mini-sandboxd and `mini-sandbox run`, written against
# the contract in docs/design.md ("The three programs"): exit statuses, argv and shell forms,
# merged and streamed output, cwd and workspace, timeouts, clean-up of
# everything a command started, concurrency, private daemons, SIGTERM.
#
# Runs as the invoking user, or (MINI_TEST_ROOTLESS=1 as root) as an
# unprivileged user; see tests/lib.sh.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"

HOST_NAME=$(cat /proc/sys/kernel/hostname)

# ---- programs answer --help and --version (docs/design.md, "Conventions") -----------
for prog in mini-sandbox mini-sandboxd; do
    expect_rc "$prog --help exits 0" 0 bounded "$MINI_BIN/$prog" --help
    expect_rc "$prog --version exits 0" 0 bounded "$MINI_BIN/$prog" --version
done

start_daemon
SBX_PROFILE=strict

# ---- sanity: the sandbox exists and isolates ----------------------------
run sbx -- 'echo "pid=$$ host=$(cat /proc/sys/kernel/hostname)"'
if [[ $RC == 0 && $OUT =~ pid=([0-9]+)\ host=(.*) ]] &&
   (( BASH_REMATCH[1] <= 3 )) && [[ ${BASH_REMATCH[2]} != "$HOST_NAME" ]]; then
    pass "sanity: command runs in its own pid and uts namespace (${BASH_REMATCH[0]})"
else
    fail "sanity: command runs in its own pid and uts namespace" \
        "expected pid <= 3 and a hostname other than the host's ($HOST_NAME)"
    log "# the sandbox does not run or does not isolate: the other checks would mean nothing; stopping"
    finish
fi

# ---- ping, stats, profiles ---------------------------------------------
expect_rc "ping" 0 cli ping
run cli stats
if [[ $RC == 0 && -n $OUT ]]; then pass "stats prints something"; else fail "stats prints something"; fi
run cli profiles
if [[ $RC == 0 ]] && contains "$OUT" strict && contains "$OUT" standard && contains "$OUT" permissive; then
    pass "profiles lists strict, standard, permissive"
else
    fail "profiles lists strict, standard, permissive"
fi

# ---- exit statuses -----------------------------------------------------
expect_rc "exit status 0" 0 sbx -- true
expect_rc "exit status 1" 1 sbx -- false
expect_rc "exit status 3" 3 sbx -- 'exit 3'
expect_rc "exit status 255" 255 sbx -- 'exit 255'
expect_rc "killed by SIGKILL -> 137" 137 sbx -- 'kill -9 $$'
expect_rc "killed by SIGTERM -> 143" 143 sbx -- 'kill -TERM $$'
expect_rc "killed by SIGSEGV -> 139 (argv form)" 139 sbx -- sh -c 'kill -SEGV $$'
expect_rc "no such command (shell form) -> 127" 127 sbx -- 'no-such-command-mini-test'
expect_rc "no such command (argv form) -> 127" 127 sbx -- /no/such/mini-test-command arg
printf '#!/bin/sh\necho should not run\n' >"$WS/noexec.sh"
chmod 0644 "$WS/noexec.sh"
expect_rc "non-executable file (shell form) -> 126" 126 sbx -- "$WS/noexec.sh"
expect_rc "non-executable file (argv form) -> 126" 126 sbx -- "$WS/noexec.sh" arg
printf '#!/bin/sh\necho "script:$1"\n' >"$WS/yesexec.sh"
chmod 0755 "$WS/yesexec.sh"
expect_eq "executable script in the workspace runs" "script:x" sbx -- "$WS/yesexec.sh" x

# ---- argv form and shell form -----------------------------------------
expect_eq "argv form passes arguments verbatim (no shell)" 'a  b|$HOME|*|;|' \
    sbx -- printf '%s|' 'a  b' '$HOME' '*' ';'
expect_eq "one word goes to /bin/sh -c" "X2" sbx -- 'echo $((6*7)) | tr 4 X'
expect_eq "shell form sees shell syntax (&&, ;, redirections)" "ok-1" \
    sbx -- 'false || echo ok >/dev/null; test 1 = 1 && echo ok-1'

# ---- output ------------------------------------------------------------
expect_eq "stdout and stderr are merged on stdout, in order" $'one\ntwo\nthree' \
    sbx -- 'echo one; echo two >&2; echo three'
run sbx -- 'printf abc'
if [[ $RC == 0 && $(wc -c <"$T/.out") -eq 3 && $OUT == abc ]]; then
    pass "output is passed byte for byte (no newline added)"
else
    fail "output is passed byte for byte (no newline added)" "stdout had $(wc -c <"$T/.out") bytes"
fi
run sbx -- 'seq 1 10000'
if [[ $RC == 0 && $(printf '%s\n' "$OUT" | wc -l) -eq 10000 && $(printf '%s\n' "$OUT" | tail -n 1) == 10000 ]] &&
   [[ $(printf '%s\n' "$OUT" | md5sum) == $(seq 1 10000 | md5sum) ]]; then
    pass "10000 lines of output arrive complete and in order"
else
    fail "10000 lines of output arrive complete and in order"
fi
run sbx -- 'head -c 20000000 /dev/zero | tr "\0" a; echo; echo END'
if [[ $RC == 0 ]] && [[ $(wc -c <"$T/.out") -gt 0 ]]; then
    pass "a command printing 20 MB finishes with status 0"
else
    fail "a command printing 20 MB finishes with status 0"
fi

# Streaming: the first line must reach the client while the command runs.
stream_out=$T/stream.out
sbx -- 'echo first-line; sleep 6; echo second-line' >"$stream_out" 2>&1 &
stream_pid=$!
BG_PIDS+=("$stream_pid")
if wait_until 5 grep -q first-line "$stream_out" && ! pid_exited "$stream_pid"; then
    pass "output is streamed while the command runs"
else
    fail "output is streamed while the command runs" \
        "first-line did not appear within 5 s of a 6 s command; got: $(head -c 200 "$stream_out")"
fi
wait_pid "$stream_pid" 20 || true

# stdin: forwarded or not, a command reading stdin must not hang.
printf 'hello-stdin\n' >"$T/stdin.txt"
RC=0
SBX_STDIN=keep sbx -- cat <"$T/stdin.txt" >"$T/.out" 2>"$T/.err" || RC=$?
OUT=$(cat "$T/.out") ERR=$(cat "$T/.err")
if [[ $RC == 0 && $OUT == hello-stdin ]]; then
    pass "stdin is forwarded to the command"
elif [[ $RC == 0 && -z $OUT ]]; then
    skip "stdin is forwarded to the command" "the client does not forward stdin (cat read EOF, did not hang)"
else
    fail "a command reading stdin gets its input or EOF, and does not hang"
fi

# ---- workspace and cwd -------------------------------------------------
expect_eq "default cwd is the workspace" "$WS" sbx -- pwd
mkdir -p "$WS/sub/dir"
is_root && chown -R "$(stat -c %u:%g "$WS")" "$WS/sub"
expect_eq "--cwd a directory inside the workspace" "$WS/sub/dir" sbx --cwd "$WS/sub/dir" -- pwd
in_dir() { (cd "$1" && shift && "$@"); }
run in_dir "$WS/sub" bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --profile strict -- pwd
if [[ $RC == 0 && $OUT == "$WS/sub" ]]; then
    pass "--workspace defaults to the current directory"
else
    fail "--workspace defaults to the current directory"
fi
rm -f "$WS/written"
run sbx -- "echo from-inside >'$WS/written'"
if [[ $RC == 0 && -f $WS/written && $(cat "$WS/written") == from-inside ]]; then
    pass "the workspace is writable and writes reach the host"
else
    fail "the workspace is writable and writes reach the host"
fi
echo host-data >"$WS/from-host"
expect_eq "host files in the workspace are visible at the same path" "host-data" sbx -- "cat '$WS/from-host'"
expect_refused "--cwd that does not exist -> 125" sbx --cwd "$WS/no/such/dir" -- 'echo SHOULD-NOT-RUN'

# ---- environment -------------------------------------------------------
expect_eq "--env passes a variable" "bar" sbx --env FOO=bar -- 'echo "$FOO"'
expect_eq "--env repeated, value with = and spaces" "1|x=y z" \
    sbx --env A=1 --env 'B=x=y z' -- 'echo "$A|$B"'
expect_eq "each command gets a fresh process (no state kept)" "unset" \
    sbx -- 'echo "${MINI_PERSIST:-unset}"'

# ---- refusals ----------------------------------------------------------
expect_refused "unknown profile -> 125" sbx --profile no-such-profile-mini-test -- 'echo SHOULD-NOT-RUN'
printf '{ this is not json' >"$T/bad-profile.json"
expect_refused "malformed profile file -> 125" sbx --profile "$T/bad-profile.json" -- 'echo SHOULD-NOT-RUN'
run bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --profile strict --workspace "$T/no-such-ws" -- 'echo SHOULD-NOT-RUN'
if [[ $RC == 125 && -n $ERR ]] && ! contains "$OUT" SHOULD-NOT-RUN; then
    pass "missing workspace -> 125"
else
    fail "missing workspace -> 125" "expected status 125 with a message on stderr"
fi
if [[ -f $MINI_SOURCE_DIR/profiles/strict.json ]]; then
    cp "$MINI_SOURCE_DIR/profiles/strict.json" "$T/my-profile.json"
    expect_eq "--profile FILE (a copy of strict.json)" "from-file" \
        sbx --profile "$T/my-profile.json" -- 'echo from-file'
else
    fail "--profile FILE (a copy of strict.json)" "$MINI_SOURCE_DIR/profiles/strict.json is missing"
fi
for prof in strict standard permissive; do
    expect_eq "built-in profile $prof runs a command" "$prof-ok" \
        bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$WS" --profile "$prof" -- "echo $prof-ok"
done
expect_eq "no --profile: the default profile runs" "default-ok" \
    bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$WS" -- 'echo default-ok'

# ---- nothing outlives its command ---------------------------------------
S_BG=$(uniq_sleep 31)
S_FILE=$(uniq_sleep 2)
rm -f "$WS/survived"
run sbx -- "(setsid sh -c 'sleep $S_BG' &); (setsid sh -c 'sleep $S_FILE; touch \"$WS/survived\"' &); nohup sleep $S_BG >/dev/null 2>&1 & echo started"
if [[ $RC == 0 && $OUT == *started* ]] && wait_until 3 no_process "sleep $S_BG"; then
    pass "double-forked setsid background processes are killed when the command returns"
else
    fail "double-forked setsid background processes are killed when the command returns" \
        "still running on the host: $(pids_by_cmdline "sleep $S_BG" | tr '\n' ' ')"
fi
sleep 4
check "a background process could not write after its command returned" test ! -e "$WS/survived"

# ---- timeouts ----------------------------------------------------------
S_TO=$(uniq_sleep 300)
t0=$(now_ms)
run sbx --timeout 1 -- "(setsid sleep $S_TO &); echo partial; sleep 30"
elapsed=$(( $(now_ms) - t0 ))
if [[ $RC == 124 ]]; then pass "--timeout 1 -> status 124"; else fail "--timeout 1 -> status 124"; fi
if contains "$OUT" partial; then pass "output before the timeout is kept"; else fail "output before the timeout is kept"; fi
if (( elapsed < 10000 )); then pass "--timeout 1 returns promptly (${elapsed} ms)"
else fail "--timeout 1 returns promptly" "took ${elapsed} ms"; fi
if wait_until 3 no_process "sleep $S_TO"; then
    pass "the whole process tree is killed on timeout"
else
    fail "the whole process tree is killed on timeout" "sleep $S_TO still runs"
fi
expect_rc "a command that ends before its timeout keeps its status" 7 sbx --timeout 20 -- 'exit 7'

# ---- a client that goes away takes its command with it ------------------
S_CL=$(uniq_sleep 61)
sbx -- "sleep $S_CL" >/dev/null 2>&1 &
cl_pid=$!
BG_PIDS+=("$cl_pid")
if wait_until 10 has_process "sleep $S_CL"; then
    # Kill the client process itself (it runs under timeout(1)).
    for p in $(client_pids "sleep $S_CL"); do kill -KILL "$p" 2>/dev/null || true; done
    if wait_until 10 no_process "sleep $S_CL"; then
        pass "killing the client kills its sandboxed command"
    else
        fail "killing the client kills its sandboxed command" "sleep $S_CL still runs 10 s after the client died"
    fi
else
    fail "killing the client kills its sandboxed command" "the command did not start"
fi
wait_pid "$cl_pid" 5 || true

# ---- concurrency: two clients, 50 commands each --------------------------
client_loop() {
    local tag=$1 i bad=0 o
    for i in $(seq 1 50); do
        o=$(sbx -- "echo $tag-$i-a; sleep 0.0$((RANDOM % 5)); echo $tag-$i-b >&2" 2>"$T/loop-$tag.err") || {
            echo "run $i: status $?: $(head -c 300 "$T/loop-$tag.err")" >>"$T/loop-$tag.log"
            bad=$((bad + 1))
            continue
        }
        if [[ $o != "$tag-$i-a"$'\n'"$tag-$i-b" ]]; then
            printf 'run %s: got %q\n' "$i" "$o" >>"$T/loop-$tag.log"
            bad=$((bad + 1))
        fi
    done
    echo "$bad" >"$T/loop-$tag.result"
}
rm -f "$T"/loop-*
client_loop alpha-$RUN_TAG &
la=$!
client_loop beta-$RUN_TAG &
lb=$!
BG_PIDS+=("$la" "$lb")
wait_pid "$la" 240 || true
wait_pid "$lb" 240 || true
for tag in alpha-$RUN_TAG beta-$RUN_TAG; do
    res=$(cat "$T/loop-$tag.result" 2>/dev/null || echo "no result")
    if [[ $res == 0 ]]; then
        pass "concurrent client $tag: 50 commands, 50 correct and separate results"
    else
        fail "concurrent client $tag: 50 commands, 50 correct and separate results" \
            "bad results: $res" "$(head -n 10 "$T/loop-$tag.log" 2>/dev/null)"
    fi
done

# ---- the daemon survives bad clients -------------------------------------
# docs/protocol.md and include/mini/proto.h: a bad frame gets an error reply
# (id null) and the connection is closed; a payload that does not decode
# gets an error reply; the daemon keeps serving everyone else.
if have python3; then
    run bounded python3 - "$SOCK" <<'PY'
import json, socket, struct, sys, time
path = sys.argv[1]
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    return s
def frame(payload):
    return struct.pack(">I", len(payload)) + payload
def read_frame(s):
    hdr = b""
    while len(hdr) < 4:
        b = s.recv(4 - len(hdr))
        if not b:
            return None
        hdr += b
    n = struct.unpack(">I", hdr)[0]
    body = b""
    while len(body) < n:
        b = s.recv(n - len(body))
        if not b:
            return None
        body += b
    return json.loads(body)
cases = [
    ("length over the limit", b"\xff\xff\xff\xff"),
    ("zero length", b"\x00\x00\x00\x00"),
    ("not JSON", frame(b"hello")),
    ("empty object", frame(b"{}")),
    ("op is not a string", frame(b'{"op":1}')),
    ("an array", frame(b"[1,2,3]")),
    ("trailing garbage", frame(b'{"op":"stats","id":1}garbage')),
    ("unknown op", frame(b'{"op":"no-such-op","id":5}')),
    ("invalid UTF-8", frame(b'{"op":"stats","id":6,"x":"\xff"}')),
    ("duplicate key", frame(b'{"op":"stats","id":7,"id":8}')),
    ("NUL escape", frame(b'{"op":"stats","id":9,"x":"a\\u0000b"}')),
    ("deep nesting", frame(b"[" * 200000 + b"]" * 200000)),
    ("huge id", frame(b'{"op":"stats","id":1e300}')),
    ("exec in no session", frame(b'{"op":"exec","id":10,"session":"nope","command":"true"}')),
]
bad = 0
for name, data in cases:
    try:
        s = conn()
    except OSError as e:
        print("BAD " + name + ": the daemon no longer accepts connections: " + repr(e))
        sys.exit(1)
    try:
        s.sendall(data)
        reply = read_frame(s)
        ok = isinstance(reply, dict) and reply.get("op") == "error"
        print(("ok  " if ok else "BAD ") + name + ": " + json.dumps(reply)[:200])
        bad += not ok
    except Exception as e:
        print("BAD " + name + ": " + repr(e))
        bad += 1
    s.close()
# A truncated frame then EOF, an idle client, half a frame left hanging:
# none of them may block the daemon.
t = conn(); t.sendall(b"\x00\x00\x01\x00{\"op\":"); t.shutdown(socket.SHUT_WR)
idle = conn()
half = conn(); half.sendall(b"\x00\x00\x01\x00{\"op\":")
time.sleep(0.3)
s = conn()
s.sendall(frame(b'{"op":"stats","id":42}'))
r = read_frame(s)
print(("ok  " if r and r.get("id") == 42 else "BAD ") + "stats while bad clients hang on: " + json.dumps(r)[:200])
bad += not (r and r.get("id") == 42)
sys.exit(1 if bad else 0)
PY
    if [[ $RC == 0 ]] && ping_ok; then
        pass "malformed frames get error replies and do not stop the daemon"
    else
        fail "malformed frames get error replies and do not stop the daemon"
    fi
    expect_eq "commands still run after malformed frames" "still-ok" sbx -- 'echo still-ok'
else
    skip "malformed frames get error replies" "python3 not installed"
fi

# ---- pipelined requests ------------------------------------------------------
# docs/protocol.md, "Pipelining": hello, open, stats and a bad open sent in
# one write, without waiting (mini-sandbox run sends hello and open so):
# each is answered once, by id (an `opened` may come after later replies).
if have python3; then
    run bounded python3 - "$SOCK" "$WS" "$MINI_SOURCE_DIR/tests" <<'PY'
import socket, sys
sys.path.insert(0, sys.argv[3])
from rawframe import frame, recv_frame
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
s.sendall(frame({"op": "hello", "id": 1, "version": 1}) +
          frame({"op": "open", "id": 2, "workspace": sys.argv[2], "profile": "strict"}) +
          frame({"op": "stats", "id": 3}) +
          frame({"op": "open", "id": 4, "workspace": sys.argv[2], "profile": "no-such-profile"}))
got = sorted((recv_frame(s) for _ in range(4)), key=lambda r: r["id"])
print([(r["id"], r["op"], r.get("code")) for r in got])
want = [(1, "hello", None), (2, "opened", None), (3, "stats", None), (4, "error", "profile_invalid")]
if [(r["id"], r["op"], r.get("code")) for r in got] != want:
    sys.exit(1)
s.sendall(frame({"op": "exec", "id": 5, "session": got[1]["session"], "command": "echo piped"}))
r = recv_frame(s)
print(r["op"], repr(r.get("output")))
sys.exit(0 if r["op"] == "exit" and r["output"] == "piped\n" else 1)
PY
    if [[ $RC == 0 ]]; then pass "pipelined hello, open, stats and a bad open: one reply each, the session works"
    else fail "pipelined hello, open, stats and a bad open: one reply each, the session works"; fi
else
    skip "pipelined requests" "python3 not installed"
fi

# ---- only our own uid (and root) may connect ------------------------------
if is_root && have setpriv; then
    mini_setpriv_cmd
    chmod 0711 "$T"
    chmod 0666 "$SOCK" 2>/dev/null || true
    run "${SETPRIV[@]}" timeout 10 "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace /tmp -- 'echo PEER-ACCEPTED'
    if [[ $RC != 0 ]] && ! contains "$OUT" PEER-ACCEPTED; then
        pass "a peer with another uid is refused (SO_PEERCRED), even with the socket opened up"
    else
        fail "a peer with another uid is refused (SO_PEERCRED), even with the socket opened up"
    fi
    chmod 0600 "$SOCK" 2>/dev/null || true
    chmod 0700 "$T"
else
    skip "a peer with another uid is refused" "needs root to act as a second user"
fi

# ---- default socket location, modes, SIGTERM ------------------------------
XDG=$T/xdg-default
mkdir -m 0700 "$XDG"
mapfile -t prof_args < <(mini_profiles_args)
XDG_RUNTIME_DIR=$XDG "$MINI_BIN/mini-sandboxd" --state-dir "$T/state2" --foreground "${prof_args[@]}" \
    >"$T/daemon2.log" 2>&1 </dev/null &
d2=$!
BG_PIDS+=("$d2")
dsock=$XDG/mini/sandboxd.sock
if wait_until 10 test -S "$dsock"; then
    pass "default socket is \$XDG_RUNTIME_DIR/mini/sandboxd.sock"
    check "socket directory is mode 0700" test "$(stat -c %a "$XDG/mini")" = 700
    check "socket is mode 0600" test "$(stat -c %a "$dsock")" = 600
    expect_eq "the client finds the daemon at the default socket" "via-default" \
        env XDG_RUNTIME_DIR="$XDG" timeout 30 "$MINI_BIN/mini-sandbox" run --profile strict --workspace "$WS" -- 'echo via-default'
else
    fail "default socket is \$XDG_RUNTIME_DIR/mini/sandboxd.sock" "$(tail -n 20 "$T/daemon2.log")"
fi
kill -TERM "$d2" 2>/dev/null || true
d2rc=0
wait_pid "$d2" 10 || d2rc=$?
check "second daemon exits 0 on SIGTERM" test "$d2rc" = 0
check "second daemon removed its socket" test ! -e "$dsock"

# ---- daemon death (SIGKILL) takes every sandbox with it --------------------
XDGK=$T/xdg-kill
mkdir -m 0700 "$XDGK"
XDG_RUNTIME_DIR=$XDGK "$MINI_BIN/mini-sandboxd" --state-dir "$T/state3" --foreground "${prof_args[@]}" \
    >"$T/daemon3.log" 2>&1 </dev/null &
d3=$!
BG_PIDS+=("$d3")
S_KILL=$(uniq_sleep 300)
if wait_until 10 test -S "$XDGK/mini/sandboxd.sock"; then
    env XDG_RUNTIME_DIR="$XDGK" timeout 60 "$MINI_BIN/mini-sandbox" run --profile strict --workspace "$WS" \
        -- "sleep $S_KILL & sleep $S_KILL" >/dev/null 2>&1 &
    BG_PIDS+=("$!")
    if wait_until 10 has_process "sleep $S_KILL"; then
        kill -KILL "$d3"
        if wait_until 5 no_process "sleep $S_KILL"; then
            pass "SIGKILL of the daemon kills its running sandboxes"
        else
            fail "SIGKILL of the daemon kills its running sandboxes" "sleep $S_KILL still runs"
        fi
    else
        fail "SIGKILL of the daemon: a running command to orphan" "sleep $S_KILL did not start"
    fi
else
    fail "SIGKILL of the daemon: a third daemon to kill" "$(tail -n 20 "$T/daemon3.log")"
fi

# ---- private daemon when none is listening --------------------------------
XDGP=$T/xdg-private
mkdir -m 0700 "$XDGP"
MARK="mini-private-$RUN_TAG"
procs_with_mark() {
    local d
    for d in /proc/[0-9]*; do
        [[ ${d#/proc/} == "$$" ]] && continue
        if { tr '\0' '\n' <"$d/environ"; } 2>/dev/null | grep -qxF "MINI_TEST_PRIVATE=$MARK"; then
            printf '%s ' "${d#/proc/}"
        fi
    done
}
no_marked_procs() { [[ -z $(procs_with_mark) ]]; }
run env XDG_RUNTIME_DIR="$XDGP" MINI_TEST_PRIVATE="$MARK" timeout 60 \
    "$MINI_BIN/mini-sandbox" run --profile strict --workspace "$WS" -- 'echo private-ok'
if [[ $RC == 0 && $OUT == private-ok ]]; then
    pass "without a listening daemon the client starts a private one"
else
    fail "without a listening daemon the client starts a private one"
fi
if wait_until 5 no_marked_procs; then
    pass "nothing is left running after a private-daemon call"
else
    left=$(procs_with_mark)
    fail "nothing is left running after a private-daemon call" \
        "still running: $(for p in $left; do tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null; echo; done)"
    for p in $left; do kill -KILL "$p" 2>/dev/null || true; done
fi

# ---- SIGTERM to the main daemon, with a command running --------------------
S_TERM=$(uniq_sleep 300)
sbx -- "sleep $S_TERM" >/dev/null 2>&1 &
tc=$!
BG_PIDS+=("$tc")
if ! ping_ok; then
    fail "SIGTERM: the daemon is still running to be stopped" "it does not answer ping (see the failures above)"
elif wait_until 10 has_process "sleep $S_TERM"; then
    drc=0
    stop_daemon || drc=$?
    check "SIGTERM: the daemon exits with status 0" test "$drc" = 0
    check "SIGTERM: the daemon removes its socket" test ! -e "$SOCK"
    if wait_until 5 no_process "sleep $S_TERM"; then
        pass "SIGTERM: running sandboxes are killed"
    else
        fail "SIGTERM: running sandboxes are killed" "sleep $S_TERM still runs"
    fi
    crc=0
    wait_pid "$tc" 10 || crc=$?
    if [[ $crc != 0 && $crc != 255 ]]; then
        pass "SIGTERM: the waiting client returns with a failure status ($crc)"
    else
        fail "SIGTERM: the waiting client returns with a failure status" "client status: $crc"
    fi
else
    fail "SIGTERM: a running command to interrupt" "sleep $S_TERM did not start"
fi

finish

#!/bin/bash
# The degraded path, for real: mini-sandboxd runs where user namespaces
# are blocked the way Docker's default seccomp profile blocks them
# (mini-test-nouserns).  strict must refuse with a remedy; standard must
# still run, confined by Landlock, seccomp, no_new_privs, rlimits and a
# process-group kill, and say that it is degraded.  Each check tries to
# break a confinement property and fails if the attempt succeeds.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"

NOUSERNS=$MINI_BIN/mini-test-nouserns
TAG=$RUN_TAG

if ! "$NOUSERNS" true 2>/dev/null; then
    skip_all "cannot install the user-namespace filter here"
fi
if "$NOUSERNS" unshare -U true 2>/dev/null; then
    fail "the filter blocks user namespaces" "unshare -U still works under mini-test-nouserns"
    finish
fi
if ! "$MINI_BIN/mini-sandbox" check --json </dev/null 2>/dev/null |
        python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["machine"]["landlock"]["available"] else 1)'; then
    skip_all "Landlock is not available in this kernel"
fi

# The workspace must be reachable by the sandbox's uid (a root daemon
# runs degraded commands as the workspace's owner; it refuses root's).
DWS=$(mktemp -d /tmp/mini-degraded-ws.XXXXXX)
cleanup_path "$DWS"
if is_root; then chown 65534:65534 "$DWS"; fi
chmod 0755 "$DWS"
SECRET=$HOME/mini-degraded-secret-$TAG
echo "top-secret-$TAG" >"$SECRET"
cleanup_path "$SECRET"
OUTSIDE=/tmp/mini-degraded-outside-$TAG
cleanup_path "$OUTSIDE"

dsbx() {
    bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$DWS" "$@" </dev/null
}

# ---- mini-sandbox check tells the truth ------------------------------------
run bounded "$NOUSERNS" "$MINI_BIN/mini-sandbox" check </dev/null
if [[ $RC == 1 && $OUT == *strict*REFUSED* && $OUT == *standard*DEGRADED* ]]; then
    pass "check: strict refused, standard degraded, exit status 1"
else
    fail "check: strict refused, standard degraded, exit status 1"
fi
run bounded "$NOUSERNS" "$MINI_BIN/mini-sandbox" check --profile strict --json </dev/null
if [[ $OUT == *'"refused"'* && $OUT == *remedy* ]]; then pass "check --json: strict refused with a remedy"
else fail "check --json: strict refused with a remedy"; fi

DAEMON_WRAPPER=$NOUSERNS start_daemon

# ---- strict refuses ----------------------------------------------------------
run dsbx --profile strict -- 'echo SHOULD-NOT-RUN'
if [[ $RC == 125 && $ERR == *isolation_unavailable* && $ERR == *remedy* && $OUT != *SHOULD-NOT-RUN* ]]; then
    pass "strict refuses with isolation_unavailable and the remedy"
else
    fail "strict refuses with isolation_unavailable and the remedy"
fi

# ---- a network allowlist needs the sandbox's own network namespace -----------
run dsbx --profile standard --allow-host pypi.org -- 'echo SHOULD-NOT-RUN'
if [[ $RC == 125 && $ERR == *isolation_unavailable* && $ERR == *"allowlist network needs"* && $OUT != *SHOULD-NOT-RUN* ]]
then pass "an allowlist is refused where there is no network namespace for its proxy"
else fail "an allowlist is refused where there is no network namespace for its proxy"; fi

# ---- standard runs, degraded, and says so ------------------------------------
run dsbx -v --profile standard -- 'echo degraded-ok'
if [[ $RC == 0 && $OUT == degraded-ok && $ERR == *degraded* ]]; then
    pass "standard runs and says it is degraded"
else
    fail "standard runs and says it is degraded"
fi
run dsbx --profile standard -- 'echo quiet-ok'
if [[ $RC == 0 && $OUT == quiet-ok && $ERR != *degraded* ]]; then
    pass "without -v, run does not repeat the degraded note"
else
    fail "without -v, run does not repeat the degraded note"
fi
expect_eq "writes to the workspace reach the host" "ws-$TAG" \
    dsbx --profile standard -- "echo ws-$TAG > $DWS/f && cat $DWS/f"
check "the workspace file is on the host" test "$(cat "$DWS/f" 2>/dev/null)" = "ws-$TAG"
expect_eq "TMPDIR is private and writable" "tmp-ok" \
    dsbx --profile standard -- 'echo tmp-ok > "$TMPDIR/a" && cat "$TMPDIR/a"'

# Each attempt prints BREACH when it works.
attempt() {   # NAME SNIPPET
    run dsbx --profile standard -- "if ( $2 ) >/dev/null 2>&1; then echo BREACH; else echo denied; fi"
    if [[ $RC == 0 && $OUT == denied ]]; then pass "$1"
    elif [[ $OUT == *BREACH* ]]; then fail "$1" "the attempt succeeded"
    else fail "$1" "the sandboxed command did not run to the end"; fi
}
attempt "write to host /tmp" "echo x > $OUTSIDE"
check "nothing was written to host /tmp" test ! -e "$OUTSIDE"
attempt "write to /etc" "touch /etc/mini-degraded-$TAG"
attempt "write to /usr" "touch /usr/mini-degraded-$TAG"
attempt "write to the home directory" "touch $HOME/mini-degraded-w-$TAG"
attempt "read a secret in the home directory" "cat $SECRET"
attempt "list /root" "ls /root"
attempt "connect to the daemon's socket" "python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"$SOCK\")'"
attempt "signal the daemon" "kill -0 $DAEMON_PID"
attempt "read the daemon's environment" "cat /proc/$DAEMON_PID/environ"
attempt "leave the process group (setsid)" "setsid true"
attempt "create a user namespace" "unshare -U true"
if have python3; then
    python3 - >"$T/listener.port" 2>/dev/null <<'PY' &
import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
time.sleep(300)
PY
    BG_PIDS+=("$!")
    if wait_until 10 test -s "$T/listener.port"; then
        port=$(head -n 1 "$T/listener.port")
        attempt "TCP to a listener on the host's loopback" \
            "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", $port), 2)'"
    fi
fi

# ---- nothing outlives the command ---------------------------------------------
S_BG=$(uniq_sleep 300)
run dsbx --profile standard -- "(sleep $S_BG &) ; nohup sleep $S_BG >/dev/null 2>&1 & echo started"
if [[ $OUT == started ]] && wait_until 5 no_process "sleep $S_BG"; then
    pass "background processes are gone when the command returns"
else
    fail "background processes are gone when the command returns" "$(pids_by_cmdline "sleep $S_BG")"
    pkill -KILL -f "sleep $S_BG" || true
fi
S_TO=$(uniq_sleep 301)
run dsbx --profile standard --timeout 1 -- "echo partial; sleep $S_TO & sleep $S_TO"
if [[ $RC == 124 && $OUT == partial* ]] && wait_until 5 no_process "sleep $S_TO"; then
    pass "timeout kills the whole group and keeps the partial output"
else
    fail "timeout kills the whole group and keeps the partial output"
    pkill -KILL -f "sleep $S_TO" || true
fi

finish

#!/bin/bash
# Bounded queues and counts: sessions per connection (busy), a
# client that never reads its replies, a frame cut short, and root as a
# client of a rootless daemon.  Host-side: the daemon's resident memory.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
# The daemon's memory is measured: in a sanitizer build, keep freed memory
# out of ASan's quarantine (256 MiB by default), as limits.sh does.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4"
have python3 || skip_all "python3 is needed"
start_daemon
CMD_TIMEOUT=150
run bounded python3 "$MINI_SOURCE_DIR/tests/security/queue_checks.py" "$SOCK" "$WS" "$DAEMON_PID"
while IFS= read -r line; do
    case $line in
        "ok - "*) pass "${line#ok - }" ;;
        "not ok - "*) fail "${line#not ok - }" "" ;;
    esac
done <<<"$OUT"
[[ -n $OUT ]] || fail "queue checks ran" "$ERR"
if ! ping_ok; then fail "the daemon survived" "$(tail -n 5 "$DAEMON_LOG")"; else pass "the daemon survived"; fi
stop_daemon || true

# Root is a client of a rootless daemon too (docs/protocol.md: the daemon accepts its own uid, plus root).
if is_root; then
    d=$(mktemp -d /tmp/mini-rootcli.XXXXXX)
    cleanup_path "$d"
    chown 65534:65534 "$d"
    mini_setpriv_cmd
    "${SETPRIV[@]}" "$MINI_BIN/mini-sandboxd" --socket "$d/run/sock" --state-dir "$d/state" --foreground \
        >"$T/rootless-daemon.log" 2>&1 </dev/null &
    rpid=$!
    BG_PIDS+=("$rpid")
    if wait_until 10 test -S "$d/run/sock"; then
        run bounded "$MINI_BIN/mini-sandbox" ping --socket "$d/run/sock"
        if [[ $RC == 0 ]]; then pass "root is served by a rootless daemon"
        else fail "root is served by a rootless daemon" "status $RC: $ERR"; fi
    else
        fail "root is served by a rootless daemon" "the rootless daemon did not start: $(cat "$T/rootless-daemon.log")"
    fi
    kill "$rpid" 2>/dev/null || true
    wait_pid "$rpid" 10 || true
else
    skip "root as a client of a rootless daemon" "needs root"
fi
finish

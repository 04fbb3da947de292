#!/bin/bash
# Back-pressure on streamed output: a client that sends
# streaming execs of fast printers and never reads keeps the daemon's
# memory bounded, its commands blocked, others served; all ends cleanly
# once it reads or goes.  Host-side: the daemon's resident memory.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
# The daemon's memory is measured: in a sanitizer build, keep freed memory
# out of ASan's quarantine (256 MiB by default), as limits.sh does.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4"
have python3 || skip_all "python3 is needed"
start_daemon
CMD_TIMEOUT=200
run bounded python3 "$MINI_SOURCE_DIR/tests/reliability/stream_checks.py" "$SOCK" "$WS" "$DAEMON_PID"
while IFS= read -r line; do
    case $line in
        "ok - "*) pass "${line#ok - }" ;;
        "not ok - "*) fail "${line#not ok - }" "" ;;
        "# "*) log "$line" ;;
    esac
done <<<"$OUT"
[[ $OUT == *"ok - "* ]] || fail "streaming checks ran" "$ERR"
if ping_ok; then pass "the daemon survived"; else fail "the daemon survived" "$(tail -n 5 "$DAEMON_LOG")"; fi
# This daemon's only: the rootless variant runs the same commands beside it.
leftover=$(for p in $(pgrep -f -x 'head -c 209715200'); do descends_from "$DAEMON_PID" "$p" && echo "$p"; done)
check "no command is left running" test -z "$leftover"
stop_daemon || true
finish

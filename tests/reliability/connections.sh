#!/bin/bash
# Connections at the daemon's limits: at the open-files limit
# clients get busy (not a hang, a busy loop or a log flood), requests that
# need an fd get busy (not io_error or cwd_invalid); the soft limit is
# raised to the hard one; a connections cap derived from the limit, or set
# by --max-clients; a frame left half sent is closed after --frame-timeout.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
have python3 || skip_all "python3 is needed"
CMD_TIMEOUT=150
CHECKS=$MINI_SOURCE_DIR/tests/reliability/connection_checks.py

# checks MODE: run the Python checks against the running daemon.
checks() {
    run bounded python3 "$CHECKS" "$1" "$SOCK" "$WS" "$DAEMON_PID" "$DAEMON_LOG"
    while IFS= read -r line; do
        case $line in
            "ok - "*) pass "${line#ok - }" ;;
            "not ok - "*) fail "${line#not ok - }" "" ;;
            "# "*) log "$line" ;;
        esac
    done <<<"$OUT"
    [[ $OUT == *"ok - "* ]] || fail "$1 checks ran" "$ERR"
}

# A wrapper running the daemon under an open-files limit: "64" sets soft
# and hard, "soft 64" the soft one only.
nofile() {
    local w=$T/nofile-$1${2:+-$2}
    if [[ $1 == soft ]]; then
        printf '#!/bin/bash\nulimit -S -n %s && exec "$@"\n' "$2" >"$w"
    else
        printf '#!/bin/bash\nulimit -n %s && exec "$@"\n' "$1" >"$w"
    fi
    chmod +x "$w"
    printf '%s' "$w"
}

# ---- at the open-files limit (64), with a cap above it -------------------
DAEMON_WRAPPER=$(nofile 64) start_daemon --max-clients 1000
checks fdlimit
if ping_ok; then pass "the daemon survived the fd limit"; else fail "the daemon survived the fd limit"; fi
stop_daemon || true
mv "$DAEMON_LOG" "$T/daemon-fdlimit.log"

# ---- the default cap under that limit ------------------------------------
DAEMON_WRAPPER=$(nofile 64) start_daemon
checks cap
stop_daemon || true
mv "$DAEMON_LOG" "$T/daemon-cap.log"

# ---- soft limit raised; --max-clients; --frame-timeout --------------------
hard=$(ulimit -H -n)
if [[ $hard == unlimited ]] || (( hard > 64 )); then
    DAEMON_WRAPPER=$(nofile soft 64) start_daemon --max-clients 3 --frame-timeout 2
    soft=$(awk '/^Max open files/ { print $4 }' "/proc/$DAEMON_PID/limits")
    want=$hard
    [[ $hard == unlimited ]] && want=$(cat /proc/sys/fs/nr_open)
    if [[ $soft == "$want" ]]; then pass "the open-files soft limit is raised to the hard one ($soft)"
    else fail "the open-files soft limit is raised to the hard one" "soft $soft, hard $hard"; fi
else
    skip "the open-files soft limit is raised to the hard one" "the hard limit is $hard"
    start_daemon --max-clients 3 --frame-timeout 2
fi
checks maxcli
if ping_ok; then pass "the daemon survived"; else fail "the daemon survived"; fi
stop_daemon || true
finish

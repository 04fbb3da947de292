#!/bin/bash
# The daemon's life cycle under faults:
# - kill -9 of mini-sandboxd in the middle of commands, on the namespace
#   path and on the Landlock path: nothing of the commands may outlive it,
#   and the next daemon's start reclaims what the dead one left on the
#   host (cgroups, the Landlock path's private TMPDIRs, session overlays):
#   the leak census;
# - SIGTERM: every running command gets its `exit` with limit "shutdown"
#   before the connection closes, and `mini-sandbox run` reports 143;
# - the state directory deleted under a running daemon is made again;
# - a full state filesystem: a standard session fails with one clear line,
#   strict still runs.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
TAG=$RUN_TAG
NOUSERNS=$MINI_BIN/mini-test-nouserns
N=3   # commands per profile in the census

# ---- census helpers --------------------------------------------------------

# Processes of our commands: each runs `sleep <a value of this run only>`.
count_sleeps() { local n; n=$(pgrep -c -f -x "sleep $1" 2>/dev/null) || true; printf '%s' "${n:-0}"; }
no_sleeps() { [[ $(count_sleeps "$1") == 0 ]]; }
enough_sleeps() { (( $(count_sleeps "$1") >= $2 )); }
kill_sleeps() { local p; for p in $(pgrep -f -x "sleep $1" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done; return 0; }

# cgroup directories of the daemon with pid $1 (the parents and every
# command group inside them), in any v1 or v2 hierarchy.
count_cgroups() {
    local n=0 d
    for d in /sys/fs/cgroup /sys/fs/cgroup/*; do
        [[ -d $d ]] || continue
        n=$(( n + $(find "$d" -maxdepth 10 -type d -path "*/mini-sandboxd-$1*" 2>/dev/null | wc -l) ))
    done
    printf '%s' "$n"
}

# Entries of the daemon with pid $1 in the state directory's sessions.
count_state() {
    { find "$T/state/sessions" -mindepth 1 -maxdepth 1 -name "$1-*"; find "$T/state" -maxdepth 1 -name "*-$1.lock"; } \
        2>/dev/null | wc -l
}

# Host mounts under our temp dir (the daemon mounts nothing there itself).
count_mounts() { awk -v t="$T" 'index($5, t) == 1' /proc/self/mountinfo | wc -l; }

# Temp dirs named in $T/tmps (one per line) that still exist.
count_tmps() {
    local n=0 d
    while read -r d; do
        [[ -n $d && -e $d ]] && n=$((n + 1))
    done <"$1"
    printf '%s' "$n"
}

# The census's daemons run under a parent that does not reap them (as a
# supervisor that is slow to wait): killed, the daemon stays a zombie
# while the next one starts, as its pid could stay taken by another
# process.  Its pid is in $T/daemon.pid; the parent is $DAEMON_PID.
NOREAP=$T/noreap
cat >"$NOREAP" <<EOF
#!/bin/sh
"\$@" &
echo \$! >"$T/daemon.pid"
exec sleep $(uniq_sleep 399)
EOF
chmod 0755 "$NOREAP"
kill9_daemon() {
    OLD_PID=$(cat "$T/daemon.pid")
    WRAP_PID=$DAEMON_PID
    DAEMON_PID=
    kill -KILL "$OLD_PID" 2>/dev/null || true
}
# The zombie goes once its parent does.
reap_old() { kill -KILL "$WRAP_PID" 2>/dev/null || true; wait "$WRAP_PID" 2>/dev/null || true; }

# Start $N commands per profile given, in the background, each printing its
# TMPDIR (host path on the Landlock path) into a file, then sleeping in two
# processes.  $1: the sleep value; $2: the workspace; rest: profiles.
start_commands() {
    local s=$1 ws=$2 i p
    shift 2
    for p in "$@"; do
        for ((i = 0; i < N; i++)); do
            bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$ws" --profile "$p" -- \
                "printf '%s\n' \"\$TMPDIR\" >$ws/tmpdir.$p.$i; sleep $s & sleep $s; wait" \
                </dev/null >/dev/null 2>&1 &
            BG_PIDS+=("$!")
        done
    done
}

# census NAME SLEEP WORKSPACE PROFILES...: run commands, kill -9 the daemon,
# count what is left: processes after a short wait, files and cgroups after
# the next daemon has started.
census() {
    local name=$1 s=$2 ws=$3
    shift 3
    local profiles=("$@") want=$(( N * 2 * $# ))
    cleanup_cmd "kill_sleeps $s"
    DAEMON_WRAPPER="$NOREAP ${DAEMON_WRAPPER:-}" start_daemon
    local old
    old=$(cat "$T/daemon.pid")
    start_commands "$s" "$ws" "${profiles[@]}"
    if ! wait_until 30 enough_sleeps "$s" "$want"; then
        fail "$name: the commands run" "$(count_sleeps "$s") of $want processes"
    fi
    local running_cg
    running_cg=$(count_cgroups "$old")
    kill9_daemon
    wait_until 10 no_sleeps "$s" || true
    local procs
    procs=$(count_sleeps "$s")
    log "# census $name: before kill -9: $want processes, $running_cg cgroups; after the kill (waiting at most 10 s): $procs processes"
    check "$name: no command outlives a kill -9 of the daemon ($procs of $want left)" test "$procs" = 0
    kill_sleeps "$s"
    local b
    for b in "${BG_PIDS[@]}"; do wait_pid "$b" 20 || true; done
    BG_PIDS=()
    cat "$ws"/tmpdir.* 2>/dev/null | grep '^/' >"$T/tmps.$name" || true
    DAEMON_WRAPPER= start_daemon
    # One command through the new daemon, as a user would.
    SBX_PROFILE=${profiles[0]} run bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$ws" \
        --profile "${profiles[0]}" -- true </dev/null
    reap_old
    local cg st tm mo
    cg=$(count_cgroups "$old")
    st=$(count_state "$old")
    tm=$(count_tmps "$T/tmps.$name")
    mo=$(count_mounts)
    log "# census $name: after the next start: $cg cgroups, $st state entries, $tm of $(wc -l <"$T/tmps.$name") TMPDIRs, $mo mounts of the dead daemon"
    check "$name: the next start removes the dead daemon's cgroups ($cg left)" test "$cg" = 0
    check "$name: the next start removes the dead daemon's overlays and TMPDIRs ($st state entries, $tm TMPDIRs, $mo mounts left)" \
        test "$st$tm$mo" = 000
    stop_daemon || true
    rm -f "$ws"/tmpdir.*
}

# ---- kill -9, namespace path ---------------------------------------------

census "namespace path" "$(uniq_sleep 301)" "$WS" strict standard

# ---- kill -9, Landlock path ------------------------------------------------

landlock_ok=1
if ! "$NOUSERNS" true 2>/dev/null; then
    landlock_ok=0
    skip "Landlock path" "cannot install the user-namespace filter here"
elif ! "$MINI_BIN/mini-sandbox" check --json </dev/null 2>/dev/null |
        python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["machine"]["landlock"]["available"] else 1)'; then
    landlock_ok=0
    skip "Landlock path" "Landlock is not available in this kernel"
fi
if (( landlock_ok )); then
    # The workspace must be reachable by the sandbox's uid (a root daemon
    # runs degraded commands as the workspace's owner).
    DWS=$(mktemp -d /tmp/mini-lifecycle-ws.XXXXXX)
    cleanup_path "$DWS"
    if is_root; then chown 65534:65534 "$DWS"; fi
    chmod 0777 "$DWS"
    DAEMON_WRAPPER=$NOUSERNS census "Landlock path" "$(uniq_sleep 302)" "$DWS" standard permissive
fi

# ---- SIGTERM: every running command gets its exit ------------------------

sigterm() {   # NAME SLEEP WORKSPACE PROFILE
    local name=$1 s=$2 ws=$3 prof=$4
    cleanup_cmd "kill_sleeps $s"
    start_daemon
    bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$ws" --profile "$prof" -- \
        "echo started; sleep $s" </dev/null >"$T/term.out" 2>"$T/term.err" &
    local cpid=$!
    BG_PIDS+=("$cpid")
    wait_until 20 enough_sleeps "$s" 1 || true
    local dpid=$DAEMON_PID drc=0 crc=0
    DAEMON_PID=
    kill -TERM "$dpid"
    wait_pid "$dpid" 20 || drc=$?
    wait_pid "$cpid" 20 || crc=$?
    RC=$crc OUT=$(cat "$T/term.out") ERR=$(cat "$T/term.err")
    if [[ $crc == 143 && $ERR == *shutdown* && $OUT == *started* ]]; then
        pass "$name: SIGTERM: the running command gets its exit (limit shutdown), run reports 143"
    else
        fail "$name: SIGTERM: the running command gets its exit (limit shutdown), run reports 143" \
            "client status $crc"
    fi
    check "$name: SIGTERM: the daemon exits 0 ($drc) and removes its socket" test "$drc:$(test -e "$SOCK" && echo there)" = 0:
    wait_until 10 no_sleeps "$s" || true
    check "$name: SIGTERM: nothing of the command is left" no_sleeps "$s"
}
sigterm "namespace path" "$(uniq_sleep 303)" "$WS" strict
if (( landlock_ok )); then
    DAEMON_WRAPPER=$NOUSERNS sigterm "Landlock path" "$(uniq_sleep 304)" "$DWS" standard
fi

# ---- the state directory deleted under a running daemon -----------------

start_daemon
expect_eq "a command before the state dir is deleted" "before" sbx --profile strict -- echo before
rm -rf "$T/state"
expect_eq "strict: a command after the state dir was deleted" "after" sbx --profile strict -- echo after
expect_eq "standard: a command after the state dir was deleted" "after" sbx --profile standard -- echo after
mode=$(stat -c '%a:%u' "$T/state" 2>/dev/null || echo missing)
check "the state dir is made again, 0700 and the daemon's ($mode)" test "$mode" = "700:$(id -u)"
stop_daemon || true

# ---- a full state filesystem ---------------------------------------------

if is_root && have mount; then
    FULL=$T/fullstate
    mkdir -m 0700 "$FULL"
    if mount -t tmpfs -o size=2m,nr_inodes=1024,mode=0700 tmpfs "$FULL" 2>/dev/null; then
        cleanup_cmd "umount -l $FULL"
        start_daemon --state-dir "$FULL"
        # Full: no block and no inode left.
        dd if=/dev/zero of="$FULL/fill" bs=64k >/dev/null 2>&1 || true
        mkdir "$FULL/inodes"
        for ((i = 0; i < 4096; i++)); do : 2>/dev/null >"$FULL/inodes/$i" || break; done
        run sbx --profile standard -- 'echo SHOULD-NOT-RUN'
        if [[ $RC == 125 && $ERR == *"No space left on device"* && $ERR == *sessions* && $OUT != *SHOULD-NOT-RUN* ]]; then
            pass "full state fs: standard fails with one clear line naming the sessions directory"
        else
            fail "full state fs: standard fails with one clear line naming the sessions directory"
        fi
        expect_eq "full state fs: strict still runs" "strict-ok" sbx --profile strict -- echo strict-ok
        rm -rf "$FULL/fill" "$FULL/inodes"
        expect_eq "full state fs: standard runs again once there is room" "std-ok" sbx --profile standard -- echo std-ok
        stop_daemon || true
        umount -l "$FULL" 2>/dev/null || true
    else
        skip "full state fs" "cannot mount a tmpfs here"
    fi
else
    skip "full state fs" "needs root to mount a small tmpfs as the state dir"
fi

finish

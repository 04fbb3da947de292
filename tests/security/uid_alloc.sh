#!/bin/bash
# Host uids across root daemons (sandbox/isolation/uidrange.c,
# docs/isolation.md "Whose ids a sandbox runs as").  Every private daemon
# (mini-sandbox run or mini without a shared daemon) is a root daemon of
# its own: two of them must never give their sandboxes the same host uid,
# or the per-uid kernel counters (RLIMIT_NPROC, epoll watches, pipe pages,
# pending signals) are shared between sessions after all.  A daemon claims
# blocks of uids with a lock file each under /run/mini-sandboxd/uids.
#
#  a. two daemons, a long-running command in each: their processes' host
#     uids differ
#  b. four sessions in each of three daemons: twelve distinct uids
#  c. kill -9 one daemon while a process of its uid still runs (planted
#     here: its sandboxes die with it): a new daemon's session does not get
#     that uid; once the process is gone, its block is claimed again
#  d. /run/mini-sandboxd a symlink, owned by another user, writable by
#     others, or its uids directory a symlink (each in a mount namespace of
#     its own, over a private /run): the daemon does not start, says why,
#     and creates nothing through the link
#
# Root only (a rootless daemon's sandboxes are its user).  Prints
# "N passed, N failed".
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
MINI_TEST_LOG_LEVEL=info
mini_test_init "$@"
is_root || skip_all "root only: a rootless daemon's sandboxes run as its user"
have setpriv || skip_all "setpriv (util-linux) is not installed"
have unshare || skip_all "unshare (util-linux) is not installed"

LOCKS=/run/mini-sandboxd/uids
BLOCK=64
declare -A DPID DSOCK

# extra_daemon N: a root daemon of its own on $T/runN/sock.
extra_daemon() {
    local n=$1 args=()
    mapfile -t args < <(mini_profiles_args)
    mkdir -p -m 0700 "$T/run$n" "$T/state$n"
    DSOCK[$n]=$T/run$n/sock
    "$MINI_BIN/mini-sandboxd" --socket "${DSOCK[$n]}" --state-dir "$T/state$n" --foreground \
        --log-level "$MINI_TEST_LOG_LEVEL" "${args[@]}" \
        >>"$T/daemon$n.log" 2>&1 </dev/null &
    DPID[$n]=$!
    if ! wait_until 10 timeout 5 "$MINI_BIN/mini-sandbox" ping --socket "${DSOCK[$n]}" >/dev/null 2>&1; then
        fail "daemon $n starts" "$(tail -n 20 "$T/daemon$n.log")"
        finish
    fi
}

stop_extra() {
    local n=$1
    [[ -n ${DPID[$n]:-} ]] || return 0
    kill -TERM "${DPID[$n]}" 2>/dev/null || true
    wait_pid "${DPID[$n]}" 10 || true
    DPID[$n]=
}

# sleeper N ARG: a session in daemon N running `sleep ARG`, in the background.
sleeper() {
    bounded "$MINI_BIN/mini-sandbox" run --socket "${DSOCK[$1]}" --workspace "$WS" --profile strict -- sleep "$2" \
        </dev/null >/dev/null 2>&1 &
    BG_PIDS+=($!)
}

# uid_of ARG: the host uid (real) of the process `sleep ARG`, once it runs.
uid_of() {
    local pid=
    wait_until 20 has_process "sleep $1" || return 0
    pid=$(pids_by_cmdline "sleep $1" | head -n 1)
    awk '/^Uid:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true
}

# Host uids of every live process.
live_uids() { awk '/^Uid:/ { print $2; print $3; print $4; print $5 }' /proc/[0-9]*/status 2>/dev/null | sort -u; }

DSOCK[1]=$SOCK
start_daemon
DPID[1]=$DAEMON_PID
extra_daemon 2
extra_daemon 3

# ---- a. two daemons, one session each
SA1=$(uniq_sleep 301)
SA2=$(uniq_sleep 302)
sleeper 1 "$SA1"
sleeper 2 "$SA2"
UA1=$(uid_of "$SA1")
UA2=$(uid_of "$SA2")
RC=0 OUT= ERR=
if [[ -n $UA1 && -n $UA2 && $UA1 != 0 && $UA1 != "$UA2" ]]; then
    pass "[a] two daemons' sandboxes run as different host uids ($UA1, $UA2)"
else
    fail "[a] two daemons' sandboxes run as different host uids" "daemon 1: '$UA1', daemon 2: '$UA2'"
fi

# ---- b. many sessions across three daemons
declare -a SB_ARGS=()
for n in 1 2 3; do
    for i in 1 2 3 4; do
        a=$(uniq_sleep "31$n$i")
        SB_ARGS+=("$a")
        sleeper "$n" "$a"
    done
done
UIDS_B=()
for a in "${SB_ARGS[@]}"; do
    UIDS_B+=("$(uid_of "$a")")
done
all=$(printf '%s\n' "$UA1" "$UA2" "${UIDS_B[@]}")
n_all=$(printf '%s\n' "$all" | grep -c . || true)
n_uniq=$(printf '%s\n' "$all" | grep . | sort -u | wc -l)
if [[ $n_all == 14 && $n_uniq == 14 ]]; then
    pass "[b] 14 sessions in 3 daemons: 14 distinct host uids"
else
    fail "[b] 14 sessions in 3 daemons: 14 distinct host uids" "uids: $(printf '%s ' $all)"
fi

# ---- c. kill -9 a daemon while a process of its uid still runs
U2=$(printf '%s\n' "$UA2" "${UIDS_B[@]:4:4}" | sort -n | head -n 1)
kill -KILL "${DPID[2]}"
wait "${DPID[2]}" 2>/dev/null || true
DPID[2]=
sa2_gone() { no_process "sleep $SA2"; }
if wait_until 5 sa2_gone; then
    pass "[c] the killed daemon's sandboxes die with it (PR_SET_PDEATHSIG, then their pid namespace)"
else
    fail "[c] the killed daemon's sandboxes die with it" "sleep $SA2 still runs"
fi
# What could outlive it (a zombie nobody reaps, a process of a sandbox
# whose init is still being killed): planted here with the same uid.
SP=$(uniq_sleep 330)
setpriv --reuid="$U2" --regid="$U2" --clear-groups sleep "$SP" </dev/null >/dev/null 2>&1 &
PLANTED=$!
BG_PIDS+=("$PLANTED")
wait_until 5 has_process "sleep $SP" || true
extra_daemon 4
SC4=$(uniq_sleep 304)
sleeper 4 "$SC4"
U4=$(uid_of "$SC4")
RC=0 OUT= ERR=
if [[ -n $U4 && $U4 != "$U2" && $U4 != "$UA1" ]] && ! printf '%s\n' "${UIDS_B[@]:0:4}" "${UIDS_B[@]:8:4}" | grep -qx "$U4"; then
    pass "[c] a new daemon does not give out a uid a process still runs as (got $U4, not $U2)"
else
    fail "[c] a new daemon does not give out a uid a process still runs as" "new: '$U4', planted: $U2"
fi
kill -KILL "$PLANTED" 2>/dev/null || true
wait "$PLANTED" 2>/dev/null || true
# The killed daemon's sandbox inits were reparented to pid 1, which reaps
# them when it will: until then they are zombies of the block's uids,
# still counted against them (RLIMIT_NPROC), and the block stays skipped.
block_pids() {
    ps -eo pid=,uid=,gid= | awk -v u="$U2" -v b="$BLOCK" '($2 >= u - u % b && $2 < u - u % b + b) ||
        ($3 >= u - u % b && $3 < u - u % b + b) { print $1 }'
}
block_free() { [[ -z $(block_pids) ]]; }
t0=$(now_ms)
wait_until 60 block_free || true
log "# no process of uid $U2's block left after $(( $(now_ms) - t0 )) ms (zombies wait for pid 1)"
extra_daemon 5
SC5=$(uniq_sleep 305)
sleeper 5 "$SC5"
U5=$(uid_of "$SC5")
B2=$((U2 - U2 % BLOCK))
B5=$((${U5:-0} - ${U5:-0} % BLOCK))
held_by_other() { ! flock -n "$LOCKS/$B2" true 2>/dev/null; }
RC=0 OUT= ERR=
others=$(printf '%s\n' "$UA1" "$U4" "${UIDS_B[@]:0:4}" "${UIDS_B[@]:8:4}")
name="[c] once the process is gone, the block is claimed again"
if [[ -z $U5 ]] || printf '%s\n' "$others" | grep -qx "$U5"; then
    fail "$name" "new daemon's uid: '$U5', in use: $(printf '%s ' $others)"
elif [[ $B5 == "$B2" ]]; then
    pass "$name (new daemon's uid $U5)"
elif grep -q "uids $B2 to .*skipped" "$T/daemon5.log"; then
    fail "$name" "the new daemon skipped it: $(grep "uids $B2 to" "$T/daemon5.log")" \
        "$(ps -eo pid,ppid,uid,gid,stat,args | awk -v u="$B2" 'NR == 1 || ($3 >= u && $3 < u + 64) || ($4 >= u && $4 < u + 64)')"
elif (( B5 < B2 )); then
    # Beside other tests: a lower block was given back meanwhile.
    skip "$name" "the new daemon claimed a lower block ($B5), free again meanwhile"
elif held_by_other; then
    pass "$name (by another daemon first; the new one got $U5)"
else
    fail "$name" "new daemon's uid $U5, the block of $U2 is free and was not taken"
fi
for n in 4 5 3; do stop_extra "$n"; done
stop_daemon || true

# ---- d. an unsafe lock directory: refused, nothing made through a link
# bad_run SETUP: in a mount namespace of its own with an empty /run, run
# SETUP, then a daemon; prints its exit status and log.
bad_run() {
    local args=()
    mapfile -t args < <(mini_profiles_args)
    mkdir -p -m 0700 "$T/run9" "$T/state9"
    unshare -m --propagation private bash -c '
        mount -t tmpfs -o mode=0755 tmpfs /run || exit 99
        eval "$1"
        shift
        timeout 10 "$@" >"$0" 2>&1 </dev/null
        echo "status $?"' "$T/daemon9.log" "$1" "$MINI_BIN/mini-sandboxd" --socket "$T/run9/sock" \
        --state-dir "$T/state9" --foreground "${args[@]}" 2>&1
    cat "$T/daemon9.log"
}
refused() {
    local name=$1 setup=$2 target=${3:-}
    OUT=$(bad_run "$setup") RC=0 ERR=
    if contains "$OUT" "status 99"; then
        skip "$name" "cannot mount a tmpfs over /run in a new mount namespace"
    elif ! contains "$OUT" "status 0" && ! contains "$OUT" "status 124" && contains "$OUT" /run/mini-sandboxd &&
        { [[ -z $target ]] || [[ -z $(ls -A "$target") ]]; }; then
        pass "$name"
    else
        fail "$name" "the daemon's status and log:" "$OUT" "$([[ -n $target ]] && ls -la "$target")"
    fi
}
mkdir -m 0700 "$T/evil"
refused "[d] /run/mini-sandboxd a symlink: refused, nothing created through it" \
    "ln -s $T/evil /run/mini-sandboxd" "$T/evil"
refused "[d] its uids directory a symlink: refused, nothing created through it" \
    "mkdir -m 0700 /run/mini-sandboxd && ln -s $T/evil /run/mini-sandboxd/uids" "$T/evil"
refused "[d] /run/mini-sandboxd owned by another user: refused" \
    "mkdir -m 0700 /run/mini-sandboxd && chown 65534:65534 /run/mini-sandboxd"
refused "[d] /run/mini-sandboxd writable by others: refused" \
    "mkdir -m 0700 /run/mini-sandboxd && chmod 0777 /run/mini-sandboxd"
# The positive control: an empty /run is fine, and the directories made
# are root's, 0700.
OUT=$(unshare -m --propagation private bash -c '
    mount -t tmpfs -o mode=0755 tmpfs /run || exit 99
    "$@" >/dev/null 2>&1 </dev/null &
    d=$!
    for i in $(seq 50); do [ -d /run/mini-sandboxd/uids ] && break; sleep 0.1; done
    stat -c "%U %a %F" /run/mini-sandboxd /run/mini-sandboxd/uids
    kill -TERM $d; wait $d' bash "$MINI_BIN/mini-sandboxd" --socket "$T/run9/sock" --state-dir "$T/state9" --foreground \
    $(mini_profiles_args) 2>&1) RC=0 ERR=
expect_ok_dirs="root 700 directory
root 700 directory"
if [[ $OUT == "$expect_ok_dirs" ]]; then
    pass "[d] an empty /run: the daemon makes /run/mini-sandboxd/uids, root's, 0700"
else
    fail "[d] an empty /run: the daemon makes /run/mini-sandboxd/uids, root's, 0700" "$OUT"
fi

finish

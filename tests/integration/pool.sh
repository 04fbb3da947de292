#!/bin/bash
# End-to-end correctness of mini-sandboxd's pool of prepared sandboxes
# (sandbox/daemon/session.c: the pool; each session keeps one more
# prepared sandbox than it has commands running, at most 8), through the
# wire protocol (docs/protocol.md) with tests/integration/pool_client.py.
# The checks themselves are in tests/integration/pool_checks.py; every one
# of them is reported here through lib.sh's pass/fail:
#
#  a. files created, modified (in place and by rename) and deleted on the
#     host after a sandbox was prepared are seen as they are now by the
#     command that gets that sandbox;
#  b. no command sees another command's /tmp (or /dev/shm): one after the
#     other, and while the other still runs;
#  c. every command gets a fresh sandbox: its own pid, mnt, net, uts, ipc,
#     user and cgroup namespaces (held open by the host while compared,
#     since the kernel recycles the numbers of freed namespaces), and $$
#     numbered afresh;
#  d. prepared sandboxes exist while a session is open, at most 8 of them,
#     and none is left once the session is closed (idle, with a command
#     running, right after open) or its connection closed without close;
#     closing one session leaves the other's;
#  e. 4 connections x 10 commands, 3 in flight on each: every result right
#     and attributed to its own id and session; nothing left afterwards;
#  f. prepared sandboxes SIGKILLed from outside are never handed to a
#     command (the command sent right after the kill runs), and the pool
#     is refilled and used again; a command whose sandbox dies after it
#     started is not run a second time;
#  g. the standard profile's session overlay: sandboxes prepared and run
#     side by side all start (each has its own overlayfs work directory),
#     and no work directory outlives its sandbox;
#  h. when the replacement is prepared: a command sent as soon as the
#     previous exit arrived (back to back) gets it prepared while it runs;
#     one sent after a pause does not (it would compete with the command),
#     and the pool is topped up after its exit;
#  i. the compiled seccomp programs are bounded: sessions opened and
#     closed with ever new policies leave at most 16 kept for no session,
#     and a session open through that churn still gets its own program.
#
# Runs as the invoking user, or (MINI_TEST_ROOTLESS=1 as root) as an
# unprivileged user; see tests/lib.sh.  Prints "N passed, N failed".
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
skip_if_caches_off "it checks the pool of prepared sandboxes and the seccomp program cache"

have python3 || skip_all "python3 is not installed"
PYDIR=$MINI_SOURCE_DIR/tests/integration
for f in pool_client.py pool_checks.py; do
    if [[ ! -r $PYDIR/$f ]]; then
        fail "read $PYDIR/$f" "not readable by uid $(id -u)"
        finish
    fi
done

start_daemon
SBX_PROFILE=strict

# ---- sanity: the sandbox exists and isolates ----------------------------
run sbx -- 'echo "pid=$$"'
if [[ $RC == 0 && $OUT =~ ^pid=([0-9]+)$ ]] && (( BASH_REMATCH[1] <= 3 )); then
    pass "sanity: a strict command runs in its own pid namespace (${BASH_REMATCH[0]})"
else
    fail "sanity: a strict command runs in its own pid namespace"
    log "# the sandbox does not run: the pool checks would mean nothing; stopping"
    finish
fi

# pool_group GROUP KEY...: run pool_checks.py GROUP against our daemon and
# turn each of its RESULT lines into a pass or a fail.  Every KEY must be
# reported exactly once: a check the script did not get to (it crashed,
# the daemon hung, the host-side time limit hit) is a failure.
pool_group() {
    local group=$1
    shift
    local -A want=() got=()
    local k failed_before=$FAILED
    for k in "$@"; do want[$k]=1; done
    run bounded python3 -B "$PYDIR/pool_checks.py" "$group" \
        --socket "$SOCK" --workspace "$WS" --daemon-pid "$DAEMON_PID" --state-dir "$T/state"
    local tag status key name detail why res=$OUT
    # A failed check shows its detail and the checker's diagnostics
    # (stderr), not the other checks' results.
    OUT=
    while IFS=$'\t' read -r tag status key name detail; do
        [[ $tag == RESULT ]] || continue
        if [[ -z ${want[$key]:-} ]]; then
            fail "($group) unexpected result $key: $name" "pool_checks.py reported a check pool.sh does not know"
            continue
        fi
        if [[ -n ${got[$key]:-} ]]; then
            fail "($group) $key reported twice: $name"
            continue
        fi
        got[$key]=1
        if [[ $status == ok ]]; then
            pass "$name"
            [[ -n $detail ]] && log "     $detail"
        else
            fail "$name" "$detail"
        fi
    done <<<"$res"
    OUT=$res
    why=$(printf '%s\n' "$res" | sed -n 's/^ERROR\t//p' | head -n 3)
    for k in "$@"; do
        if [[ -z ${got[$k]:-} ]]; then
            fail "($group) $k" "not reported: pool_checks.py $group exited with status $RC${why:+: $why}"
        fi
    done
    # Status 0 means every reported check passed, 1 that one failed (and
    # so shows above); anything else is a failure of its own.
    if [[ $RC != 0 ]] && { [[ $RC != 1 ]] || (( FAILED == failed_before )); }; then
        fail "($group) pool_checks.py ran to its end" "exit status $RC${why:+: $why}"
    fi
}

pool_group a a-pooled a-new a-modified a-deleted
pool_group b b-seq b-conc-a b-conc-c b-conc-own
pool_group c c-pid c-ns c-pooled
pool_group d d-baseline d-open d-bounded d-close d-other d-close-running d-early d-disconnect
pool_group e e-results e-clean
pool_group f f-immediate f-refilled f-pooled f-no-rerun
pool_group g g-concurrent g-workdirs
pool_group h h-paced h-b2b h-last
pool_group i i-bounded i-held

# ---- the daemon is fine afterwards ---------------------------------------
check "the daemon still answers after the pool checks" ping_ok
RC=0 OUT='' ERR=''
if grep -E 'preparing a sandbox|a prepared sandbox failed' "$DAEMON_LOG" >"$T/pool-warn" 2>/dev/null; then
    fail "no prepared sandbox failed (daemon log)" "$(head -n 5 "$T/pool-warn")"
else
    pass "no prepared sandbox failed (daemon log)"
fi

finish

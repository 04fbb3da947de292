#!/bin/bash
# What a new user meets first with mini-sandboxd and mini-sandbox: errors,
# the daemon's start, and output.
#  1. a detached mini-sandboxd lets go of the caller's stdout and stderr, so
#     out=$(mini-sandboxd ... 2>&1) returns; what it says before it listens
#     (why it cannot start) still reaches the caller;
#  2. usage errors are one line and "Try '... --help'.", exit 2 (run: 125); messages
#     start with the program's name; mini-sandboxd -h is --help; no daemon
#     at an explicit socket says so and how to start one; a typo in a
#     profile file names the file and the closest key;
#  3. output that cannot be written fails the call (125) with a message; the
#     degraded note of `run` shows only with -v.
#
# Runs as the invoking user, or (MINI_TEST_ROOTLESS=1 as root) as an
# unprivileged user; see tests/lib.sh.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"

SBX=$MINI_BIN/mini-sandbox
SBXD=$MINI_BIN/mini-sandboxd
mapfile -t PROFILE_ARGS < <(mini_profiles_args)

# lines STRING: how many lines STRING has.
lines() { [[ -z $1 ]] && { echo 0; return 0; }; printf '%s\n' "$1" | wc -l; }

# every_line_named PROG TEXT: each line of TEXT starts with "PROG: " or is
# the "Try 'PROG ...--help'." hint.
every_line_named() {
    local prog=$1 l
    while IFS= read -r l; do
        [[ $l == "$prog: "* || $l == "Try '$prog "*"--help'." ]] || return 1
    done <<<"$2"
    return 0
}

# ---- 1. a detached daemon lets go of the caller's streams --------------------
D1=$T/d1
mkdir -m 0700 "$D1"
S1=$D1/sock
run timeout 10 bash -c 'out=$("$1" --socket "$2" --state-dir "$3" "${@:4}" 2>&1); echo "done:$out"' \
    _ "$SBXD" "$S1" "$D1/state" "${PROFILE_ARGS[@]}"
if [[ $RC == 0 && $OUT == done:* ]]; then
    pass "out=\$(mini-sandboxd --socket S --state-dir D 2>&1) returns once the daemon listens"
else
    fail "out=\$(mini-sandboxd --socket S --state-dir D 2>&1) returns once the daemon listens" \
        "status 124 means the detached daemon kept the caller's stdout or stderr open"
fi
# The daemon, by its command line (pid), whatever became of the caller.
D1_PID=$(pids_by_cmdline "$SBXD --socket $S1 --state-dir $D1/state${PROFILE_ARGS:+ ${PROFILE_ARGS[*]}}" | head -n 1)
if [[ -n $D1_PID ]]; then
    cleanup_cmd "kill -KILL $D1_PID"
    expect_out "the detached daemon answers ping" "ok:" bounded "$SBX" ping --socket "$S1"
    check "the detached daemon's stderr is its log, STATE-DIR/sandboxd.log" \
        test "$(readlink "/proc/$D1_PID/fd/2")" = "$D1/state/sandboxd.log"
    # A second daemon on the same socket cannot start: the caller hears why.
    run timeout 10 "$SBXD" --socket "$S1" --state-dir "$D1/state" "${PROFILE_ARGS[@]}"
    if [[ $RC == 1 ]] && contains "$ERR" "mini-sandboxd: " && contains "$ERR" "another daemon is listening"; then
        pass "a detached daemon that cannot start says why on the caller's stderr"
    else
        fail "a detached daemon that cannot start says why on the caller's stderr"
    fi
    kill -TERM "$D1_PID" 2>/dev/null || true
    check "the detached daemon stops on SIGTERM (by pid)" wait_until 10 test ! -e "/proc/$D1_PID"
    check "it removed its socket" test ! -e "$S1"
else
    fail "the detached daemon is running" "no process with that command line"
fi

start_daemon
NOSOCK=$T/no-daemon.sock

# ---- 2. messages ---------------------------------------------------------------
# Usage errors: one line saying what is wrong, one hint, status 2.
# `run`'s own usage errors are 125 (its status is otherwise the command's).
usage_error() {   # NAME PROG CMD...
    local name=$1 prog=$2 want=2
    shift 2
    [[ ${2:-} == run ]] && want=125
    run bounded "$@"
    if [[ $RC == "$want" && $(lines "$ERR") -le 2 ]] && contains "$ERR" "Try '$prog" && every_line_named "$prog" "$ERR"; then
        pass "$name"
    else
        fail "$name" "expected status $want and two lines: \"$prog: ...\" and \"Try '$prog ... --help'.\""
    fi
}
usage_error "run --bogus: one line and a hint, status 125" mini-sandbox \
    "$SBX" run --bogus --socket "$SOCK" -- true
usage_error "run -x: one line and a hint, status 125" mini-sandbox "$SBX" run -x -- true
usage_error "run --timeout without its argument" mini-sandbox "$SBX" run --timeout
usage_error "run --timeout abc" mini-sandbox "$SBX" run --timeout abc -- true
usage_error "run with no command" mini-sandbox "$SBX" run --socket "$SOCK"
usage_error "no command at all" mini-sandbox "$SBX"
usage_error "an unknown command" mini-sandbox "$SBX" frobnicate
usage_error "ping with an unexpected argument" mini-sandbox "$SBX" ping --socket "$SOCK" extra
usage_error "check --bogus" mini-sandbox "$SBX" check --bogus
usage_error "bench --bogus" mini-sandbox "$SBX" bench --bogus
usage_error "mini-sandboxd --bogus: named mini-sandboxd, not its path" mini-sandboxd "$SBXD" --bogus
usage_error "mini-sandboxd --socket without its argument" mini-sandboxd "$SBXD" --socket
expect_out "mini-sandboxd -h is --help" "Usage: mini-sandboxd" bounded "$SBXD" -h
expect_out "mini-sandbox run -h is --help" "Usage: mini-sandbox" bounded "$SBX" run -h

# No daemon at an explicit socket: say so, and how to start one.
want="mini-sandbox: no daemon at $NOSOCK (start one with: mini-sandboxd --socket $NOSOCK)"
for sub in ping stats; do
    run bounded "$SBX" $sub --socket "$NOSOCK"
    if [[ $RC == 125 && $ERR == "$want" ]]; then pass "$sub with no daemon says where and how to start one"
    else fail "$sub with no daemon says where and how to start one" "expected: $want"; fi
done
run bounded "$SBX" run --socket "$NOSOCK" --workspace "$WS" -- echo SHOULD-NOT-RUN
if [[ $RC == 125 && $ERR == "$want" ]] && ! contains "$OUT" SHOULD-NOT-RUN; then
    pass "run --socket with no daemon says so (no private daemon for an explicit socket)"
else
    fail "run --socket with no daemon says so (no private daemon for an explicit socket)" "expected: $want"
fi
# Without --socket, run still starts a private daemon.
PRIV_RT=$T/priv-rt
mkdir -m 0700 "$PRIV_RT"
run env XDG_RUNTIME_DIR="$PRIV_RT" MINI_PROFILE_DIR="$MINI_SOURCE_DIR/profiles" \
    timeout 60 "$SBX" run --workspace "$WS" --profile strict -- echo private-ok </dev/null
if [[ $RC == 0 && $OUT == private-ok ]]; then pass "run without --socket and no daemon starts a private one"
else fail "run without --socket and no daemon starts a private one"; fi

# A typo in a profile file: the file is named, and the closest key offered.
PF=$T/typo-profile.json
printf '{"limts": {"pids": 64}}\n' >"$PF"
chmod 0644 "$PF"
run bounded "$SBX" run --socket "$SOCK" --workspace "$WS" --profile "$PF" -- echo SHOULD-NOT-RUN </dev/null
if [[ $RC == 125 ]] && contains "$ERR" "$PF: limts: unknown key (did you mean limits?)" &&
   ! contains "$OUT" SHOULD-NOT-RUN; then
    pass "a typo in a profile file names the file and suggests the key"
else
    fail "a typo in a profile file names the file and suggests the key" \
        "expected on stderr: $PF: limts: unknown key (did you mean limits?)"
fi

# ---- 3. output -------------------------------------------------------------------
if [[ -w /dev/full ]]; then
    RC=0
    bounded "$SBX" run --socket "$SOCK" --workspace "$WS" --profile strict -- echo hi \
        >/dev/full 2>"$T/.err" </dev/null || RC=$?
    OUT= ERR=$(cat "$T/.err")
    if [[ $RC == 125 ]] && contains "$ERR" "mini-sandbox: writing output: No space left on device"; then
        pass "run > /dev/full: a write error, status 125"
    else
        fail "run > /dev/full: a write error, status 125"
    fi
    RC=0
    bounded "$SBX" ping --socket "$SOCK" >/dev/full 2>"$T/.err" </dev/null || RC=$?
    OUT= ERR=$(cat "$T/.err")
    if [[ $RC == 125 ]] && contains "$ERR" "mini-sandbox: writing output: No space left on device"; then
        pass "ping > /dev/full: a write error, status 125"
    else
        fail "ping > /dev/full: a write error, status 125"
    fi
else
    skip "writes to /dev/full" "/dev/full is not writable here"
fi
expect_rc "--help documents status 125 for the client's own failures" 0 \
    bash -c '"$1" --help | grep -q "standard output not writable"' _ "$SBX"

# The degraded note: only with -v (check and the protocol still carry it).
SBX_PROFILE=standard
run sbx -v -- echo v-ok
if [[ $RC == 0 && $OUT == v-ok ]]; then pass "run -v is accepted"; else fail "run -v is accepted"; fi
if contains "$ERR" "note: degraded"; then
    pass "run -v shows the degraded note (this machine degrades standard here)"
    run sbx -- echo quiet-ok
    if [[ $RC == 0 && $OUT == quiet-ok ]] && ! contains "$ERR" degraded; then
        pass "run without -v does not print the degraded note"
    else
        fail "run without -v does not print the degraded note"
    fi
    run bounded "$SBX" check --profile standard
    if contains "$OUT" DEGRADED; then pass "check still reports the degradation"
    else fail "check still reports the degradation"; fi
else
    skip "the degraded note only with -v" "standard runs in full here"
fi
# Other notes (why a command could not start) still show without -v.
run sbx -- /no/such/mini-test-command arg
if [[ $RC == 127 ]] && contains "$ERR" "note:"; then pass "a command that cannot start still gets its note"
else fail "a command that cannot start still gets its note"; fi

stop_daemon
finish

#!/bin/bash
# The capability probe cache, end to end (sandbox/isolation/caps_cache.c;
# test_caps_cache.c checks the file itself).  A cache that claims more
# than the machine has must not weaken anything: with user namespaces
# blocked (mini-test-nouserns) and a forged cache that says every probe
# succeeded, the daemon takes it, and then every command fails (status
# 125) without running, under strict and under standard, instead of
# running with less isolation.  And an ordinary daemon probes on its first
# start, stores the result, and takes it on the next; a second build
# (another daemon binary) in the same runtime directory keeps a cache of
# its own, so that starting one does not make the other probe again.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
skip_if_caches_off "it checks the probe cache"

NOUSERNS=$MINI_BIN/mini-test-nouserns
# A runtime directory of the test's own: the cache lives there.
export XDG_RUNTIME_DIR=$T/xdg
mkdir -m 0700 "$XDG_RUNTIME_DIR" "$XDG_RUNTIME_DIR/mini"
CACHE=$("$MINI_BIN/test_caps_cache" path "$XDG_RUNTIME_DIR/mini" "$MINI_BIN/mini-sandboxd")
MARK=$WS/ran
cleanup_path "$MARK"

daemon_said() { grep -q "capabilities: $1" "$DAEMON_LOG"; }

# ---- an ordinary daemon: probed, stored, then taken --------------------------
MINI_TEST_LOG_LEVEL=info start_daemon
if daemon_said probed && [[ -f $CACHE ]]; then pass "first start: probed, and the cache stored"
else fail "first start: probed, and the cache stored" "$(grep capabilities "$DAEMON_LOG")"; fi
stop_daemon
: >"$DAEMON_LOG"
MINI_TEST_LOG_LEVEL=info start_daemon
if daemon_said "the probes' results cached"; then pass "second start: the cache is taken"
else fail "second start: the cache is taken" "$(grep capabilities "$DAEMON_LOG")"; fi
expect_eq "a command runs under strict with the cached result" "ok" \
    bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$WS" --profile strict -- 'echo ok' </dev/null
stop_daemon

# ---- a second build in the same runtime directory ---------------------------
# A copy of the daemon is another binary (its own device and inode): its
# first start probes and stores its own cache, and this build's stays.
OTHER=$T/other-build
mkdir -p "$OTHER"
cp "$MINI_BIN/mini-sandboxd" "$OTHER/mini-sandboxd"
OTHER_CACHE=$("$MINI_BIN/test_caps_cache" path "$XDG_RUNTIME_DIR/mini" "$OTHER/mini-sandboxd")
check "the other build's cache is another file" test "$OTHER_CACHE" != "$CACHE"
: >"$DAEMON_LOG"
# Its init is this build's: a copy alone has none beside it.
export MINI_SANDBOX_INIT=$MINI_BIN/../libexec/mini/mini-sandbox-init
MINI_TEST_LOG_LEVEL=info MINI_DAEMON_EXE="$OTHER/mini-sandboxd" start_daemon
if daemon_said probed && [[ -f $OTHER_CACHE && -f $CACHE ]]; then
    pass "the other build probes, stores its own cache, and leaves this build's"
else
    fail "the other build probes, stores its own cache, and leaves this build's" \
        "$(grep capabilities "$DAEMON_LOG"); $(ls -l "$XDG_RUNTIME_DIR/mini")"
fi
stop_daemon
unset MINI_SANDBOX_INIT
: >"$DAEMON_LOG"
MINI_TEST_LOG_LEVEL=info start_daemon
if daemon_said "the probes' results cached"; then pass "this build's next start still takes its cache"
else fail "this build's next start still takes its cache" "$(grep capabilities "$DAEMON_LOG")"; fi
stop_daemon

# ---- a cache that calls every cgroup hierarchy writable ----------------------
# Where one is not (rootless on cgroup v1, say), the daemon's own groups
# fail: it falls back to rlimits, as a probe would have made it, and
# removes the cache so that the next start tests again.
stop_daemon
: >"$DAEMON_LOG"
run "$MINI_BIN/test_caps_cache" forge-cgroups "$XDG_RUNTIME_DIR/mini" "$MINI_BIN/mini-sandboxd"
check "forge a cache that calls every cgroup hierarchy writable" test "$RC" = 0
MINI_TEST_LOG_LEVEL=info start_daemon
expect_eq "a command runs with that cache" "ok" \
    bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$WS" --profile strict -- 'echo ok' </dev/null
RC=0 OUT= ERR=
if grep -q "limits fall back to rlimits" "$DAEMON_LOG"; then
    if [[ ! -e $CACHE ]]; then pass "the cgroups it called writable were not: the cache is removed"
    else fail "the cgroups it called writable were not: the cache is removed" "$CACHE is still there"; fi
else
    pass "the cgroups it called writable are (the claim was true here)"
fi
stop_daemon

# ---- a forged cache where user namespaces are blocked ------------------------
if ! "$NOUSERNS" true 2>/dev/null || "$NOUSERNS" unshare -U true 2>/dev/null; then
    skip "a forged cache fails closed" "cannot block user namespaces here (mini-test-nouserns)"
    finish
fi
: >"$DAEMON_LOG"
run "$NOUSERNS" "$MINI_BIN/test_caps_cache" forge "$XDG_RUNTIME_DIR/mini" "$MINI_BIN/mini-sandboxd"
check "forge a cache that claims every probe succeeded" test "$RC" = 0
DAEMON_WRAPPER=$NOUSERNS MINI_TEST_LOG_LEVEL=info start_daemon
if daemon_said "the probes' results cached"; then
    pass "the daemon under the filter takes the forged cache"
    for prof in strict standard; do
        rm -f "$MARK"
        run bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$WS" --profile "$prof" \
            -- "echo SHOULD-NOT-RUN; touch $MARK" </dev/null
        if [[ $RC == 125 && $OUT != *SHOULD-NOT-RUN* && ! -e $MARK ]]; then
            pass "$prof: fails closed (125, nothing ran)"
        else
            fail "$prof: fails closed (125, nothing ran)" "status $RC, stdout: $OUT, stderr: $ERR" \
                "$([[ -e $MARK ]] && echo "the command ran: $MARK exists")"
        fi
    done
else
    fail "the daemon under the filter takes the forged cache" "$(grep capabilities "$DAEMON_LOG")"
fi
stop_daemon
finish

#!/bin/bash
# Benchmark of the sandbox: `mini-sandbox bench` against our own daemon,
# printed as its table (its scratch directories in the test's temp dir),
# then the same as JSON with every series and ratio
# checked for shape (present, finite, positive).  Figures only: no time
# thresholds; the run fails only when the benchmark itself fails or its
# output is malformed.
#
# BENCH_RUNS (default 300) sets -n.  With BENCH_SMOKE=1 (the integration
# label's variant) it runs a handful of iterations, so that CI keeps the
# command working without spending minutes on it.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"

RUNS=${BENCH_RUNS:-300}
# The smoke variant also keeps the daemon's per-step timers working (they
# would cost the timed variant a log line per command).
if [[ ${BENCH_SMOKE:-} == 1 ]]; then
    RUNS=5
    MINI_SANDBOX_TIMING=1 start_daemon
else
    start_daemon
fi

bench() { TMPDIR=$T bounded "$MINI_BIN/mini-sandbox" bench --socket "$SOCK" --profile strict -n "$RUNS" "$@"; }

run bench --concurrency 8
if [[ $RC == 0 ]]; then
    pass "mini-sandbox bench -n $RUNS runs"
    printf '%s\n' "$OUT" | sed 's/^/    /'
    for row in "back to back" "run, daemon" "run, private"; do
        grep -q "^$row " <<<"$OUT" || fail "the table has the \"$row\" row" "$OUT"
    done
else
    fail "mini-sandbox bench -n $RUNS runs" "status $RC: $ERR"
fi

run bench --concurrency 4 --json
JSON=$OUT
if [[ $RC == 0 ]] && python3 - "$JSON" <<'PY'
import json, math, sys
d = json.loads(sys.argv[1])
assert d["profile"] == "strict" and d["concurrency"] == 4, d
res = d["results"]
# bare and sandbox always; the namespace floor where this user may clone
# namespaces (the sandbox ran, so it may); bwrap only when installed.
# back to back always; the one-shot `run` rows against this daemon (given
# by --socket) and with a private one (an empty XDG_RUNTIME_DIR; left out
# only where root's client would take the system-wide daemon instead).
for k in ("bare", "sandbox", "clone_ns", "back_to_back", "oneshot_run"):
    assert k in res, "missing series " + k
import os
assert "oneshot_private" in res or (os.geteuid() == 0 and os.path.exists("/run/mini/sandboxd.sock")), res
for k, v in res.items():
    for f in ("p50_ms", "p90_ms", "p99_ms", "throughput_per_s"):
        x = v[f]
        # A one-shot row, and bwrap starting their shell, are latency
        # only: their throughput is null.
        if f == "throughput_per_s" and (k.startswith("oneshot_") or k == "bwrap_sh"):
            assert x is None, (k, f, x)
            continue
        assert isinstance(x, (int, float)) and math.isfinite(x) and x > 0, (k, f, x)
    assert v["p50_ms"] <= v["p90_ms"] <= v["p99_ms"], (k, v)
r = d["ratios"]
for f in ("sandbox_over_bare_p50", "sandbox_over_bare_throughput",
          "clone_ns_over_bare_throughput", "sandbox_over_clone_ns_throughput",
          "back_to_back_over_clone_ns_p50"):
    assert isinstance(r[f], (int, float)) and r[f] > 0, (f, r[f])
assert ("bwrap" in res) == (r["bwrap_over_sandbox_p50"] is not None), r
# "true" is one word, which `run` hands to /bin/sh -c: bwrap then runs
# that shell too, as the like-for-like baseline of the one-shot rows.
assert ("bwrap_sh" in res) == ("bwrap" in res), res
for k in ("oneshot_run", "oneshot_private"):
    assert (k in res and "bwrap" in res) == (r[k + "_over_bwrap_p50"] is not None), (k, r)
    assert (k in res and "bwrap" in res) == (r[k + "_over_bwrap_sh_p50"] is not None), (k, r)
    if r[k + "_over_bwrap_sh_p50"] is not None:
        want = res[k]["p50_ms"] / res["bwrap_sh"]["p50_ms"]
        assert abs(r[k + "_over_bwrap_sh_p50"] - want) < 0.01 * want + 0.002, (k, r, want)
PY
then
    pass "--json: every series and ratio is present and well-formed"
else
    fail "--json: every series and ratio is present and well-formed" "status $RC; output: $JSON $ERR"
fi

# A command that is not one word goes through /bin/sh -c in every row
# already: no extra bwrap row, and both one-shot ratios are the same.
if [[ ${BENCH_SMOKE:-} == 1 ]]; then
    run bench -n 3 --command "true && true" --json
    if [[ $RC == 0 ]] && python3 - "$OUT" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
res, r = d["results"], d["ratios"]
assert "bwrap_sh" not in res, res
for k in ("oneshot_run", "oneshot_private"):
    assert r[k + "_over_bwrap_p50"] == r[k + "_over_bwrap_sh_p50"], (k, r)
PY
    then
        pass "a shell command line: no second bwrap row, one-shot ratios alike"
    else
        fail "a shell command line: no second bwrap row, one-shot ratios alike" "status $RC: $OUT $ERR"
    fi
fi

# The timers: one line per command, every step present (the setup
# child's own too), and the summary script reads them.
if [[ ${BENCH_SMOKE:-} == 1 ]]; then
    lines=$(grep -c "timing: exec .*child to ready .*to exit sent" "$DAEMON_LOG")
    run python3 "$MINI_SOURCE_DIR/scripts/sandbox-timing.py" "$DAEMON_LOG"
    if ((lines >= RUNS)) && [[ $RC == 0 ]] && grep -q "^child to ready " <<<"$OUT" && grep -q "^root " <<<"$OUT"; then
        pass "MINI_SANDBOX_TIMING=1: $lines timing lines, summarised"
        printf '%s\n' "$OUT" | sed 's/^/    /'
    else
        fail "MINI_SANDBOX_TIMING=1: timing lines, summarised" "$lines lines; status $RC: $OUT $ERR"
    fi
    # The start-up and each open have theirs too, and a private daemon
    # keeps the variable from its client's environment (its lines come on
    # the client's stderr).
    if grep -q "timing: start .*capabilities .*to the event loop" "$DAEMON_LOG" &&
        grep -q "timing: open s[0-9]*: .* ms to the reply" "$DAEMON_LOG"; then
        pass "MINI_SANDBOX_TIMING=1: the start-up and open lines"
    else
        fail "MINI_SANDBOX_TIMING=1: the start-up and open lines" "$(grep 'timing: \(start\|open\)' "$DAEMON_LOG")"
    fi
    rt=$(mktemp -d "$T/rt.XXXXXX")
    XDG_RUNTIME_DIR="$rt" MINI_SANDBOX_TIMING=1 run bounded "$MINI_BIN/mini-sandbox" run --profile strict \
        --workspace "$WS" -- true
    if [[ $RC == 0 && $ERR == *"timing: start "* && $ERR == *"timing: open s1: "* && $ERR == *"timing: exec "* ]]; then
        pass "a private daemon's timers print on the client's stderr"
    else
        fail "a private daemon's timers print on the client's stderr" "status $RC: $ERR"
    fi
fi

# Bad arguments are refused with a usage error, not run.
expect_rc "-n 0 is refused" 2 bounded "$MINI_BIN/mini-sandbox" bench --socket "$SOCK" -n 0
expect_rc "--concurrency 0 is refused" 2 bounded "$MINI_BIN/mini-sandbox" bench --socket "$SOCK" --concurrency 0

# Nothing the benchmark started is left behind: no sandbox, no private
# daemon, no runtime directory of theirs.
if compgen -G "$T/mini-bench-rt.*" >/dev/null; then
    fail "the private daemons' runtime directory is removed" "$(ls -d "$T"/mini-bench-rt.*)"
else
    pass "the private daemons' runtime directory is removed"
fi
# The run rows' last session is parked with a prepared sandbox for 10 s
# (docs/sandbox-lifecycle.md, "The parked session"): it goes then.
if wait_until 20 no_sandbox_of_ours; then
    pass "no sandbox left running after the benchmark"
else
    fail "no sandbox left running after the benchmark" "$(our_sandbox_pids)"
fi
finish

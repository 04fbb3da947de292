#!/bin/bash
# Load benchmark of mini-sandboxd: tests/bench/load.py with
# CLIENTSxCOMMANDS ($1, else BENCH_LOAD, else 64x100) against a daemon of
# its own, as the invoking user or (MINI_TEST_ROOTLESS=1 as root) as uid
# 65534 (tests/lib.sh).  Its table is printed; the checks are about
# correctness only, never time:
#  - every command was answered, and with its own output (wrong 0,
#    error 0, lost 0);
#  - no busy the daemon's limits did not predict;
#  - afterwards the daemon holds no session, no running command and no
#    more fds than when idle, but for those its stats say it holds for
#    the next session (held_ahead: at most one), and exits 0 on SIGTERM;
#  - the JSON line has every figure, and its counts add up.
#
#   tests/bench/load.sh 64x100                       # as root
#   MINI_TEST_ROOTLESS=1 tests/bench/load.sh 64x100  # as uid 65534
#
# MINI_BIN defaults to build/bin of this tree.  BENCH_LOAD_TIMEOUT (s,
# default 840) bounds the whole run on the host side.
: "${MINI_BIN:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/bin}"
export MINI_BIN
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"

have python3 || skip_all "python3 is not installed"
SPEC=${1:-${BENCH_LOAD:-64x100}}
LIMIT=${BENCH_LOAD_TIMEOUT:-840}
LOADPY=$MINI_SOURCE_DIR/tests/bench/load.py
for f in "$LOADPY" "$MINI_SOURCE_DIR/tests/integration/pool_client.py"; do
    if [[ ! -r $f ]]; then
        fail "read $f" "not readable by uid $(id -u)"
        finish
    fi
done

run timeout -k 10 "$LIMIT" python3 -B "$LOADPY" --bin "$MINI_BIN" \
    --profiles "$MINI_SOURCE_DIR/profiles" --tmpdir "$T" "$SPEC"
JSON=$(printf '%s\n' "$OUT" | grep '^{' | tail -n 1 || true)
printf '%s\n' "$OUT" | grep -v '^{' | sed 's/^/    /'
if [[ $RC == 2 || $RC == 124 || $RC == 137 || -z $JSON ]]; then
    fail "load.py $SPEC ran to the end" "status $RC (124: over $LIMIT s)"
    finish
fi
pass "load.py $SPEC ran to the end (status $RC)"

# jq-free: one python3 check per fact, each with the figures it judged.
jcheck() {
    local name=$1 expr=$2
    local why
    if why=$(python3 -c '
import json, math, sys
d = json.loads(sys.argv[1])
ok = eval("(" + sys.argv[2] + ")", {"math": math}, {"d": d})
print(json.dumps({k: d.get(k) for k in sys.argv[3:]}))
sys.exit(0 if ok else 1)
' "$JSON" "$expr" "${@:3}" 2>&1); then
        pass "$name"
    else
        fail "$name" "$why"
    fi
}

jcheck "every command answered with its own output (wrong 0, error 0, lost 0)" \
    'd["wrong"] == 0 and d["error"] == 0 and d["lost"] == 0 and d["ok"] + d["busy"] == d["planned"]' \
    planned sent exits ok wrong error lost busy
jcheck "no busy that the daemon's limits did not predict" \
    'd["busy"] == 0 or d["busy_expected"]' busy busy_expected clients_refused
jcheck "the counts add up (ok+wrong+error+lost+busy = planned; sent-busy = the daemon's commands)" \
    'd["ok"] + d["wrong"] + d["error"] + d["lost"] + d["busy"] == d["planned"] == d["clients"] * d["commands"]
     and d["exits"] <= d["sent"] and d["daemon_execs"] == d["sent"] - d["busy_exec"]' \
    planned sent exits ok wrong error lost busy busy_exec daemon_execs
jcheck "the figures are there (latency, runs/s, daemon RSS and fds)" \
    'd["exits"] == 0 or (0 < d["p50_ms"] <= d["p90_ms"] <= d["p99_ms"] <= d["max_ms"]
     and d["runs_per_s"] > 0 and d["daemon_hwm_mib"] > 0 and d["daemon_fds_peak"] > 0)' \
    p50_ms p90_ms p99_ms runs_per_s daemon_hwm_mib daemon_fds_peak samples
# held_ahead: the id map made ahead (1) and, as root, the uid block this
# load's sessions took (1: at most 64 at once).
jcheck "afterwards: no session or command left, fds back to idle, exit 0 on SIGTERM" \
    'not d["odd"] and d["daemon_fds_held_ahead"] <= 2 and d["daemon_exit_status"] == 0 and d["daemon_fds_after"] <= d["daemon_fds_idle"] + d["daemon_fds_held_ahead"]' \
    daemon_fds_idle daemon_fds_peak daemon_fds_after daemon_fds_held_ahead daemon_exit_status odd
finish

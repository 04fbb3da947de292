#!/bin/bash
# Benchmark of `mini`, the agent (label bench; not part of the default CI
# run, which excludes the label).  Prints, as tables:
#
#  - start-up time: from the exec of mini to the first model request the
#    mock LLM server (tests/mock_llm.py) records, median (and min/max) of
#    10 runs, with --sandbox strict (a private mini-sandboxd started by mini,
#    the default), strict with an already running shared daemon, and off;
#  - peak memory of a 100-step run (the deterministic model, 100 replies
#    running `true`, then the submission) under --sandbox strict (and off,
#    for comparison): mini's own high-water mark (VmHWM, sampled from /proc
#    while it runs), the private daemon's, and mini's maximum RSS as
#    /usr/bin/time reports it (the largest of mini and the children it
#    reaped), with the wall time and the steps per second.
#
# Figures only: no thresholds.  The run fails only when mini itself fails.
# Environment: MINI_BIN, MINI_SOURCE_DIR (ctest sets them); BENCH_RUNS
# (default 10) and BENCH_STEPS (default 100) change the sizes.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
. "$MINI_SOURCE_DIR/tests/integration/agent_lib.sh"
agent_init

RUNS=${BENCH_RUNS:-10}
STEPS=${BENCH_STEPS:-100}
WS=$T/ws
mkws "$WS"

# ---- start-up time to the first model request ---------------------------
# One run: bash records $EPOCHREALTIME, then execs (env -i execs mini: the
# same process), so the start is taken as late as a shell can take it.
startup_run() {   # startup_run INDEX ARGS...: appends "start" to $T/starts
    local i=$1
    shift
    RC=0
    timeout -k 5 60 bash -c 'printf "%s\n" "$EPOCHREALTIME" >>"$1"; shift; exec "$@"' _ "$T/starts" \
        env -i "${MINI_BASE_ENV[@]}" "${MENV[@]}" "$MINI_BIN/mini" "$@" \
        >"$T/.out" 2>"$T/.err" </dev/null || RC=$?
    if [[ $RC != 0 ]]; then
        fail "start-up run $i ($*)" "mini exited with status $RC"
        return 1
    fi
    return 0
}

declare -A STARTUP
startup_mode() {   # startup_mode LABEL MINI-ARGS...
    local label=$1
    shift
    mock_start "$(python3 -c "import json; print(json.dumps([{'tool_calls': [{'command': 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT'}]}] * $RUNS))")"
    openai_env MSWEA_COST_TRACKING=ignore_errors
    : >"$T/starts"
    local i ok=1
    for ((i = 1; i <= RUNS; i++)); do
        startup_run "$i" -y --exit-immediately -m openai/gpt-test --workspace "$WS" -t task \
            -o "$T/startup.json" "$@" || { ok=0; break; }
    done
    mock_stop
    if [[ $ok == 1 ]]; then
        STARTUP[$label]=$(python3 - "$T/starts" "$REC" <<'PY'
import json, statistics, sys
starts = [float(x.replace(",", ".")) for x in open(sys.argv[1]).read().split()]
reqs = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
assert len(reqs) == len(starts), f"{len(reqs)} requests for {len(starts)} runs"
d = [(r["time"] - s) * 1000 for s, r in zip(starts, reqs)]
print(f"{statistics.median(d):9.1f} {min(d):9.1f} {max(d):9.1f}")
PY
        )
        pass "start-up: $label ($RUNS runs)"
    fi
}

startup_mode "--sandbox strict (private daemon)" --sandbox strict
start_daemon
startup_mode "--sandbox strict (shared daemon)" -c mini -c model.cost_tracking=ignore_errors \
    -c "environment.socket=$SOCK" --sandbox strict
stop_daemon >/dev/null 2>&1 || true
startup_mode "--sandbox off" --sandbox off

# ---- peak memory over a long run ----------------------------------------
OUTPUTS=$(python3 -c "
import json
b = 'THOUGHT: next.\n\n\`\`\`mswea_bash_command\n%s\n\`\`\`'
print(json.dumps([b % 'true'] * $STEPS + [b % 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT']))")
printf '%s' "$OUTPUTS" >"$T/outputs.json"
cat >"$T/outputs.yaml" <<EOF
model:
  outputs: $OUTPUTS
EOF

declare -A MEM
memory_mode() {   # memory_mode LABEL MINI-ARGS...
    local label=$1 r rc=0
    shift
    r=$(python3 - "$MINI_BIN/mini" "$T/mem.json" "$STEPS" "${MINI_BASE_ENV[@]}" -- "$@" <<'PY'
import json, os, subprocess, sys, time
mini, traj, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
rest = sys.argv[4:]
sep = rest.index("--")
env = dict(kv.split("=", 1) for kv in rest[:sep])
args = rest[sep + 1:]

def hwm(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0

def daemons_of(pid):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.path.basename(os.readlink(f"/proc/{d}/exe")) != "mini-sandboxd":
                continue
            with open(f"/proc/{d}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d))
        except (OSError, ValueError, IndexError):
            pass
    return out

def children_of(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []

# /usr/bin/time (a small C program, unlike this Python, whose size a forked
# child would carry into mini's ru_maxrss) reports mini's maximum RSS.
timer = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
maxrss_file = traj + ".maxrss"
cmd = [mini, *args, "-o", traj]
if timer:
    cmd = [timer, "-f", "%M", "-o", maxrss_file, *cmd]
t0 = time.monotonic()
p = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
mini_pid = None if timer else p.pid
mini_hwm = daemon_hwm = 0
daemons = []
while True:
    pid, status, ru = os.wait4(p.pid, os.WNOHANG)
    if pid:
        break
    if mini_pid is None:
        kids = children_of(p.pid)
        mini_pid = kids[0] if kids else None
    if mini_pid:
        mini_hwm = max(mini_hwm, hwm(mini_pid))
        if not daemons:
            daemons = daemons_of(mini_pid)
    for d in daemons:
        daemon_hwm = max(daemon_hwm, hwm(d))
    time.sleep(0.005)
wall = time.monotonic() - t0
err = p.stderr.read().decode(errors="replace")
rc = os.waitstatus_to_exitcode(status)
if rc != 0:
    print(f"mini exited with {rc}: {err.strip()[-500:]}")
    sys.exit(1)
t = json.load(open(traj))
calls = t["info"]["model_stats"]["api_calls"]
assert t["info"]["exit_status"] == "Submitted" and calls == steps + 1, (t["info"]["exit_status"], calls)
size = os.path.getsize(traj)
maxrss = float("nan")
if timer:
    try:
        maxrss = int(open(maxrss_file).read().split()[-1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
print(f"{mini_hwm / 1024:9.1f} {(daemon_hwm / 1024 if daemons else float('nan')):9.1f} {maxrss:9.1f}"
      f" {wall:8.2f} {steps / wall:8.1f} {size / 1024:9.0f}")
PY
    ) || rc=$?
    if [[ $rc == 0 ]]; then
        MEM[$label]=$r
        pass "memory: $label ($STEPS steps)"
    else
        fail "memory: $label ($STEPS steps)" "$r"
    fi
}

memory_mode "--sandbox strict" -y --exit-immediately -c mini_textbased -c "$T/outputs.yaml" \
    --model-class deterministic -l 0 --sandbox strict --workspace "$WS" -t task
memory_mode "--sandbox off" -y --exit-immediately -c mini_textbased -c "$T/outputs.yaml" \
    --model-class deterministic -l 0 --sandbox off --workspace "$WS" -t task

# ---- the tables ---------------------------------------------------------
log ""
log "mini start-up: exec to the first model request (ms, $RUNS runs)"
printf '%-36s %9s %9s %9s\n' "mode" "median" "min" "max"
for label in "--sandbox strict (private daemon)" "--sandbox strict (shared daemon)" "--sandbox off"; do
    printf '%-36s %s\n' "$label" "${STARTUP[$label]:-   (failed)}"
done
log ""
log "mini peak memory over a $STEPS-step run (MiB; deterministic model, each step runs \`true\`)"
printf '%-18s %9s %9s %9s %8s %8s %9s\n' "mode" "mini" "daemon" "maxrss" "wall s" "steps/s" "traj KiB"
for label in "--sandbox strict" "--sandbox off"; do
    printf '%-18s %s\n' "$label" "${MEM[$label]:-   (failed)}"
done
log "(mini, daemon: VmHWM sampled from /proc every 5 ms; maxrss: mini's maximum RSS by /usr/bin/time, which"
log " also covers the children mini reaped: its private daemon and the forks that run the commands)"

finish

#!/bin/bash
# `mini batch`'s long-lived workers and lazy summary (docs/batch.md):
#  1. 70 tasks with 1 worker: more than one worker's share (a worker
#     retires after 64 tasks and a fresh one takes the rest); every result
#     has its timing (MINI_BATCH_TIMING=1) and the batch says its own;
#  2. a worker killed (-9) in the middle of a task: that task is recorded as
#     WorkerDied (signal 9), with a result.json the batch writes (a resume
#     checks a task against it), the tasks after it run in a new worker;
#  3. summary.json behind preds.json (MINI_BATCH_SUMMARY_INTERVAL holds it
#     back) when the batch is killed with -9: the next run adds the
#     missing results from their result.json, runs none of those tasks
#     again, and summary.json is whole.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
have python3 || skip_all "python3 is missing"

MINI=$MINI_BIN/mini
start_daemon
B=$T/batch
mkdir -p "$B"
cd "$B" || exit 1
if is_root; then chmod a+rX "$B"; fi

# The first command sleeps where the task's setup left a marker.
cat >"$B/cfg.yaml" <<'EOF'
model:
  model_class: deterministic
  outputs:
    - "Working.\n```mswea_bash_command\nif [ -f slow ]; then sleep 30; fi; if [ -f nap ]; then sleep 0.3; fi; echo ok\n```"
    - "Submit.\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; echo patch\n```"
EOF
tasks() { # tasks N [SETUP-OF-TASK-0]: N tasks t-00...
    python3 - "$@" <<'EOF'
import json, sys
n = int(sys.argv[1])
for i in range(n):
    t = {"instance_id": f"t-{i:02d}", "problem_statement": f"number {i}"}
    if len(sys.argv) > 2 and (i == 0 or sys.argv[2] == "touch nap"):
        t["setup"] = sys.argv[2]
    print(json.dumps(t))
EOF
}
batch_cmd() { echo env NO_COLOR=1 "$MINI" batch "$@" -c mini -c "$B/cfg.yaml" -c "environment.socket=$SOCK" --sandbox strict; }
# json DIR EXPR: EXPR over p (preds.json) and s (summary.json's tasks).
json() {
    run python3 - "$1" "$2" <<'EOF'
import json, os, sys
d, expr = sys.argv[1:3]
def load(name):
    path = os.path.join(d, name)
    return json.load(open(path)) if os.path.exists(path) else {}
p, s = load("preds.json"), load("summary.json").get("tasks", {})
print(eval(expr))
EOF
}

# ---- 1. more tasks than one worker takes ----------------------------------------
tasks 70 >"$B/many.jsonl"
run bounded env MINI_BATCH_TIMING=1 $(batch_cmd "$B/many.jsonl" -o "$B/many" -w 1)
if [[ $RC == 0 ]] && contains "$ERR" "this run: 70 finished, 0 failed"; then pass "70 tasks, 1 worker: all finished"
else fail "70 tasks, 1 worker: all finished" "$RC $ERR"; fi
check "MINI_BATCH_TIMING: the batch says its own" contains "$ERR" "mini batch: timing: per task,"
json "$B/many" 'sorted(p) == sorted(s) == [f"t-{i:02d}" for i in range(70)] and all(r["exit_status"] == "Submitted" for r in s.values())'
check "70 tasks: each in preds.json and summary.json, Submitted" test "$OUT" = True
json "$B/many" 'all(min(r["timing"].values()) >= 0 and r["timing"]["commands_s"] > 0 and r["timing"]["open_s"] > 0 for r in s.values())'
check "MINI_BATCH_TIMING: every result has its timing" test "$OUT" = True

# ---- 2. a worker killed in the middle of a task ---------------------------------
tasks 4 "touch slow" >"$B/kill.jsonl"
$(batch_cmd "$B/kill.jsonl" -o "$B/kill" -w 1) >"$T/kill.out" 2>&1 &
bpid=$!
BG_PIDS+=("$bpid")
# t-00's setup leaves the marker its first command then sleeps on.
wait_until 30 test -e "$B/kill/t-00/workspace/slow"
sleep 0.5
worker=$(pgrep -P "$bpid" | head -1)
if [[ -n $worker ]]; then kill -KILL "$worker"; fi
rc=0
wait_pid "$bpid" 60 || rc=$?
out=$(cat "$T/kill.out")
if [[ $rc == 0 ]] && contains "$out" "t-00: WorkerDied"; then pass "a worker killed mid-task: its task is WorkerDied, the batch exits 0"
else fail "a worker killed mid-task: its task is WorkerDied, the batch exits 0" "worker '$worker', rc $rc: $out"; fi
json "$B/kill" 's["t-00"]["exit_status"] == "WorkerDied" and s["t-00"]["error"] == "WorkerDied (signal 9)" and all(s[f"t-0{i}"]["exit_status"] == "Submitted" for i in (1, 2, 3)) and sorted(p) == sorted(s)'
check "the tasks after it ran in a new worker; all four recorded" test "$OUT" = True
run python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["exit_status"])' "$B/kill/t-00/result.json"
check "the batch wrote the WorkerDied task's result.json" test "$OUT" = WorkerDied
run bounded $(batch_cmd "$B/kill.jsonl" -o "$B/kill" -w 1)
if [[ $RC == 0 ]] && contains "$ERR" "4 done in an earlier run, 0 to run"; then pass "resume: the WorkerDied task is finished, not run again"
else fail "resume: the WorkerDied task is finished, not run again" "$RC $ERR"; fi

# ---- 3. summary.json behind preds.json at a kill -9 ------------------------------
tasks 10 "touch nap" >"$B/lag.jsonl"
MINI_BATCH_SUMMARY_INTERVAL=3600 $(batch_cmd "$B/lag.jsonl" -o "$B/lag" -w 1) >"$T/lag.out" 2>&1 &
bpid=$!
BG_PIDS+=("$bpid")
preds_has() { python3 -c 'import json,sys; sys.exit(len(json.load(open(sys.argv[1]))) < int(sys.argv[2]))' "$@" 2>/dev/null; }
wait_until 60 preds_has "$B/lag/preds.json" 3
kill -KILL "$bpid"
wait "$bpid" 2>/dev/null || true
json "$B/lag" 'f"{len(p)} {len(s)}"'
read -r np ns <<<"$OUT"
if [[ $np -ge 3 && $ns -lt $np ]]; then pass "killed with summary.json behind: $np tasks in preds.json, $ns in summary.json"
else fail "killed with summary.json behind preds.json" "$OUT"; fi
sums() { # the finished tasks' trajectories and results
    python3 - "$B/lag" <<'EOF'
import hashlib, json, os, sys
d = sys.argv[1]
for i in sorted(json.load(open(os.path.join(d, "preds.json")))):
    for f in (i + ".traj.json", "result.json"):
        print(i, f, hashlib.sha256(open(os.path.join(d, i, f), "rb").read()).hexdigest())
EOF
}
before=$(sums | sort)
run bounded $(batch_cmd "$B/lag.jsonl" -o "$B/lag" -w 2)
if [[ $RC == 0 ]] && contains "$ERR" "$np done in an earlier run, $((10 - np)) to run"; then pass "resume: the $np tasks of preds.json are done"
else fail "resume: the $np tasks of preds.json are done" "$RC $ERR"; fi
after=$(sums | sort)
unchanged=$(comm -12 <(printf '%s\n' "$before") <(printf '%s\n' "$after") | wc -l)
check "resume: none of them ran again" test "$unchanged" = $((2 * np))
json "$B/lag" 'sorted(p) == sorted(s) == [f"t-{i:02d}" for i in range(10)] and all(s[i] == json.load(open(os.path.join(d, i, "result.json"))) for i in s)'
check "resume: summary.json has all 10, the missing ones from their result.json" test "$OUT" = True
json "$B/lag" 'json.load(open(os.path.join(d, "summary.json")))["totals"]["tasks"]'
check "resume: the totals count all 10" test "$OUT" = 10

finish

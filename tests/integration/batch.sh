#!/bin/bash
# `mini batch`, end to end with the deterministic model under
# the strict sandbox:
#  1. 24 tasks with 1 and with 4 workers: preds.json in SWE-bench's shape,
#     one trajectory per task with its instance_id, the task's own fields in
#     the templates, a fresh workspace per task (a copied directory, a git
#     clone at a commit), verify results and the resolve rate in
#     summary.json, one line per task on a non-terminal;
#  2. failures are recorded and do not stop the batch: a setup that fails,
#     a workspace that does not exist, a task over its wall-time limit, a
#     model that runs out of replies;
#  3. resume: kill -9 of the batch mid-run leaves valid files and no worker;
#     the same command again runs exactly the tasks that had not finished;
#  4. selection: --filter, --slice, --shard I/N (every task in exactly one
#     shard), merge (and its refusals), --redo-existing, --cost-limit-total;
#  5. bad task files get one clear line and exit 2; the workers share one
#     daemon, started for the batch when none listens.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
have python3 || skip_all "python3 is missing"
have git || skip_all "git is missing"

MINI=$MINI_BIN/mini
export MINI_IMAGE_STORE=$T/store   # the daemon's and the CLI's (section 4c)
start_daemon
B=$T/batch
mkdir -p "$B"
cd "$B" || exit 1

# The replies: a first command that writes what the template gave it (the
# task's own `repo` field) into the workspace, sleeps where setup left a
# marker, then the submission.  $1 of each task's workspace is its own.
cat >"$B/cfg.yaml" <<'EOF'
agent:
  instance_template: "Task {{task}} in {{repo}} (id {{instance_id}})"
  wall_time_limit_seconds: 3
model:
  model_class: deterministic
  cost_per_call: 0.25
  outputs:
    - "Working.\n```mswea_bash_command\nif [ -f slow ]; then sleep 4; fi; printf '%s' \"$(ls)\" > seen.txt; echo done\n```"
    - "Submit.\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; cat seen.txt; echo; pwd\n```"
EOF
# A source directory and a git repository with two commits.
mkdir -p "$B/src" && echo data >"$B/src/from-src.txt"
git init -q "$B/repo" && git -C "$B/repo" -c user.name=t -c user.email=t@t commit -q --allow-empty -m one
first=$(git -C "$B/repo" rev-parse HEAD)
echo later >"$B/repo/later.txt" && git -C "$B/repo" add later.txt &&
    git -C "$B/repo" -c user.name=t -c user.email=t@t commit -q -m two
if is_root; then chmod -R a+rX "$B"; fi

python3 - "$B" "$first" >"$B/tasks.jsonl" <<'EOF'
import json, sys
b, first = sys.argv[1:3]
for i in range(24):
    t = {"instance_id": f"task-{i:02d}", "problem_statement": f"number {i}", "repo": f"repo{i}"}
    if i % 3 == 0:
        t["verify"] = "test -f seen.txt"
    if i == 3:
        t["verify"] = "false"
    if i == 5:
        t["workspace"] = b + "/src"
    if i == 6:
        t["workspace"] = {"git": b + "/repo", "commit": first}
    if i == 7:
        t["workspace"] = {"git": b + "/repo"}
    print(json.dumps(t))
EOF

# rc_is NAME WANT: the last run's status; same NAME WANT GOT.
rc_is() { if [[ $RC == "$2" ]]; then pass "$1"; else fail "$1" "expected status $2, got $RC: $ERR"; fi; }
same() { if [[ $3 == "$2" ]]; then pass "$1"; else fail "$1" "expected: $2, got: $3"; fi; }

batch() { run bounded env NO_COLOR=1 "$MINI" batch "$@" -c mini -c "$B/cfg.yaml" -c "environment.socket=$SOCK" --sandbox strict; }

# check_out DIR N: the output's files, checked by tests/integration/batch_check.py.
check_out() { run python3 "$MINI_SOURCE_DIR/tests/integration/batch_check.py" "$@"; }

# ---- 1. 24 tasks, 1 and 4 workers ----------------------------------------------
for w in 1 4; do
    batch "$B/tasks.jsonl" -o "$B/w$w" -w "$w"
    rc_is "24 tasks, $w worker(s): exit 0" 0
    n=$(grep -c '^mini batch: \[[0-9]*/24\] task-' <<<"$ERR")
    if [[ $n == 24 ]]; then pass "$w worker(s): one line per finished task on a non-terminal"
    else fail "$w worker(s): one line per finished task on a non-terminal" "$n lines"; fi
    check_out "$B/w$w" full "$B"
    if [[ $RC == 0 ]]; then pass "$w worker(s): preds, trajectories, workspaces, verify and totals ($OUT)"
    else fail "$w worker(s): preds, trajectories, workspaces, verify and totals" "$OUT $ERR"; fi
done
if is_root; then
    check "as root, task workspaces belong to nobody (the sandbox refuses root's)" \
        test "$(stat -c %u:%g "$B/w1/task-00/workspace")" = 65534:65534
fi

# ---- 2. failures are recorded, the batch goes on -------------------------------
cat >"$B/bad.jsonl" <<EOF
{"instance_id": "setup-fails", "problem_statement": "x", "repo": "r", "setup": "echo broken >&2; exit 3"}
{"instance_id": "no-workspace", "problem_statement": "x", "repo": "r", "workspace": "$B/nonexistent"}
{"instance_id": "slow", "problem_statement": "x", "repo": "r", "setup": "touch slow"}
{"instance_id": "fine", "problem_statement": "x", "repo": "r"}
EOF
batch "$B/bad.jsonl" -o "$B/bad" -w 2
rc_is "failing tasks do not stop the batch: exit 0" 0
check_out "$B/bad" failures
if [[ $RC == 0 ]]; then pass "failures recorded: $OUT"; else fail "failures recorded" "$OUT $ERR"; fi
# A model that runs out of replies.
printf 'model:\n  outputs: ["no command here"]\n' >"$B/short.yaml"
run bounded env NO_COLOR=1 "$MINI" batch "$B/bad.jsonl" --filter fine -o "$B/short" -c mini -c "$B/cfg.yaml" \
    -c "$B/short.yaml" -c "environment.socket=$SOCK" --sandbox strict
check_out "$B/short" model_error
if [[ $RC == 0 ]]; then pass "a model that runs out of replies is a recorded failure: $OUT"
else fail "a model that runs out of replies is a recorded failure" "$OUT $ERR"; fi

# ---- 3. kill -9 mid-run, then resume -------------------------------------------
# Every task sleeps 0.4 s in its first command (setup leaves no marker: the
# sleep comes from a config of its own).
sed 's/if \[ -f slow \]; then sleep 4; fi;/sleep 0.4;/' "$B/cfg.yaml" >"$B/slowcfg.yaml"
NO_COLOR=1 "$MINI" batch "$B/tasks.jsonl" -o "$B/resume" -w 2 -c mini -c "$B/slowcfg.yaml" \
    -c "environment.socket=$SOCK" --sandbox strict >"$T/resume1.out" 2>&1 &
bpid=$!
wait_until 30 test -s "$B/resume/preds.json"
sleep 1.5
kill -KILL "$bpid"
wait "$bpid" 2>/dev/null || true
sleep 0.5
left=$(pgrep -f "$MINI batch $B/tasks.jsonl -o $B/resume" || true)
if [[ -z $left ]]; then pass "kill -9 of the batch: no worker is left"; else fail "kill -9 of the batch: no worker is left" "$left"; fi
run python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$B/resume/preds.json"
done1=$OUT
if [[ $RC == 0 && $done1 -gt 0 && $done1 -lt 24 ]]; then pass "after kill -9: preds.json is valid JSON with $done1 of 24 tasks"
else fail "after kill -9: preds.json is valid JSON with some of the tasks" "$OUT $ERR"; fi
# The finished tasks' trajectories, to see they are not run again.
sums() { python3 - "$B/resume" <<'EOF'
import json, hashlib, sys, os
d = sys.argv[1]
for i in sorted(json.load(open(os.path.join(d, "preds.json")))):
    p = os.path.join(d, i, i + ".traj.json")
    print(i, hashlib.sha256(open(p, "rb").read()).hexdigest())
EOF
}
before=$(sums)
run bounded env NO_COLOR=1 "$MINI" batch "$B/tasks.jsonl" -o "$B/resume" -w 2 -c mini -c "$B/slowcfg.yaml" \
    -c "environment.socket=$SOCK" --sandbox strict
rc_is "resume: exit 0" 0
if contains "$ERR" "$done1 done in an earlier run, $((24 - done1)) to run"; then pass "resume: skips the $done1 finished tasks"
else fail "resume: skips the $done1 finished tasks" "$ERR"; fi
after=$(sums)
unchanged=$(comm -12 <(printf '%s\n' "$before") <(printf '%s\n' "$after") | wc -l)
if [[ $unchanged == "$done1" ]]; then pass "resume: no finished task ran again (trajectories unchanged)"
else fail "resume: no finished task ran again" "$unchanged of $done1 unchanged"; fi
check_out "$B/resume" full "$B"
if [[ $RC == 0 ]]; then pass "resume: the output is whole ($OUT)"; else fail "resume: the output is whole" "$OUT $ERR"; fi

# ---- 4. selection, shards, merge, redo, cost ----------------------------------
batch "$B/tasks.jsonl" -o "$B/filt" --filter 'task-1' --slice 1:8:2
run python3 -c 'import json,sys; print(" ".join(sorted(json.load(open(sys.argv[1])))))' "$B/filt/preds.json"
same "--filter task-1 --slice 1:8:2 (Python's semantics)" "task-11 task-13 task-15 task-17" "$OUT"
for i in 0 1 2; do batch "$B/tasks.jsonl" -o "$B/shard-$i" --shard "$i/3" -w 2; done
run python3 - "$B" <<'EOF'
import json, sys
b = sys.argv[1]
seen = [i for s in range(3) for i in json.load(open(f"{b}/shard-{s}/preds.json"))]
assert len(seen) == 24 and len(set(seen)) == 24, seen
print("ok")
EOF
same "--shard I/3: every task in exactly one shard" "ok" "$OUT"
run bounded "$MINI" batch merge "$B/shard-0" "$B/shard-1" "$B/shard-2" -o "$B/merged" --tasks "$B/tasks.jsonl"
rc_is "merge of the three shards: exit 0" 0
check_out "$B/merged" merged
if [[ $RC == 0 ]]; then pass "merge: one preds.json and summary.json of 24 tasks"; else fail "merge" "$OUT $ERR"; fi
run bounded "$MINI" batch merge "$B/shard-0" "$B/shard-0" -o "$B/dup"
if [[ $RC == 1 ]] && contains "$ERR" "is in both" && [[ ! -e $B/dup/preds.json ]]; then pass "merge refuses a task found twice, writes nothing"
else fail "merge refuses a task found twice, writes nothing" "$ERR"; fi
run bounded "$MINI" batch merge "$B/shard-0" "$B/shard-1" -o "$B/miss" --tasks "$B/tasks.jsonl"
if [[ $RC == 1 ]] && contains "$ERR" "is in none of them"; then pass "merge --tasks refuses missing tasks, naming them"
else fail "merge --tasks refuses missing tasks, naming them" "$ERR"; fi
batch "$B/tasks.jsonl" -o "$B/filt" --filter 'task-1' --slice 1:8:2 --redo-existing
if contains "$ERR" "0 done in an earlier run, 4 to run"; then pass "--redo-existing runs finished tasks again"
else fail "--redo-existing runs finished tasks again" "$ERR"; fi
batch "$B/tasks.jsonl" -o "$B/cost" --cost-limit-total 1.2
run python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$B/cost/preds.json"
# 0.5 per task: the third starts at $1.0 < 1.2, no fourth at $1.5.
same "--cost-limit-total 1.2 at \$0.50 a task: 3 tasks run" "3" "$OUT"

# ---- 4b. a real API model (the mock OpenAI server), 4 workers ------------------
# Every turn submits, so that the order in which the workers' requests
# reach the mock does not matter; each request must carry its own task.
python3 -c '
import json
print(json.dumps([{"text": "Done.", "tool_calls": [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; echo patch-$(basename $PWD)"}],
                   "usage": {"input": 100, "output": 10}} for _ in range(8)]))' >"$B/mock.json"
python3 "$MINI_SOURCE_DIR/tests/mock_llm.py" --script "$B/mock.json" --record "$B/mock.jsonl" \
    --port-file "$B/mock.port" --max-lifetime 300 >/dev/null 2>"$B/mock.log" &
mock_pid=$!
cleanup_cmd "kill $mock_pid"
wait_until 10 test -s "$B/mock.port"
run bounded env OPENAI_API_KEY=sk-test-mock MSWEA_COST_TRACKING=ignore_errors NO_COLOR=1 "$MINI" batch \
    "$B/tasks.jsonl" --slice :8 -o "$B/api" -w 4 -c mini -m openai/mock-model \
    -c "model.model_kwargs.api_base=http://127.0.0.1:$(cat "$B/mock.port")" -c "environment.socket=$SOCK" \
    --sandbox strict
rc_is "8 tasks against the mock OpenAI API with 4 workers: exit 0" 0
run python3 - "$B" <<'PY'
import json, sys
b = sys.argv[1]
preds = json.load(open(f"{b}/api/preds.json"))
reqs = [json.loads(l) for l in open(f"{b}/mock.jsonl") if l.strip()]
import re
def task_of(r):  # the task text ("number N") of the request's first user message
    user = next(m["content"] for m in r["body"]["messages"] if m["role"] == "user")
    return "task-%02d" % int(re.search(r"number (\d+)", user if isinstance(user, str) else json.dumps(user)).group(1))
asked = sorted(task_of(r) for r in reqs)
ok = sorted(preds) == asked == [f"task-{i:02d}" for i in range(8)] and all(
    p["model_patch"] == "patch-workspace\n" and p["model_name_or_path"] == "openai/mock-model" for p in preds.values())
print("ok" if ok else f"preds {preds} asked {asked}")
PY
same "each worker's request carries its own task; 8 patches in preds.json" "ok" "$OUT"
kill "$mock_pid" 2>/dev/null; wait "$mock_pid" 2>/dev/null || true

# ---- 4c. a task's image is its sandbox's root -------------------------------------
if [[ -x /bin/busybox ]]; then
    python3 "$MINI_SOURCE_DIR/tests/image/mkimage.py" oci "$B/bb-oci" >/dev/null
    run bounded "$MINI_BIN/mini-sandbox" image import -q "$B/bb-oci"
    rc_is "the busybox test image imports" 0
    printf '%s\n' '{"instance_id": "img", "problem_statement": "x", "repo": "r", "image": "bb-oci:test", "verify": "cat /etc/motd"}' \
        '{"instance_id": "host", "problem_statement": "x", "repo": "r", "verify": "test -e /etc/debian_version"}' >"$B/img.jsonl"
    batch "$B/img.jsonl" -o "$B/img"
    rc_is "a batch with an image task: exit 0" 0
    run python3 - "$B/img" <<'PY'
import json, sys
s = json.load(open(sys.argv[1] + "/summary.json"))["tasks"]
print(s["img"]["exit_status"], s["img"]["verify"]["status"], s["img"]["verify"]["output_tail"].strip(),
      s["host"]["verify"]["status"])
PY
    same "the image task ran and was verified in its image; the other on the host's root" \
        "Submitted resolved hello from layer 2 resolved" "$OUT"
    run bounded "$MINI" batch "$B/img.jsonl" -o "$B/img-local" -c mini -c "$B/cfg.yaml" --sandbox off
    if [[ $RC == 2 ]] && contains "$ERR" "run with --sandbox"; then pass "an image task without a sandbox is refused, exit 2"
    else fail "an image task without a sandbox is refused, exit 2" "rc $RC: $ERR"; fi
else
    skip "a task's image" "busybox-static is not installed"
fi

# ---- 5. bad task files; a daemon of the batch's own -----------------------------
bad_file() {  # NAME CONTENT WANT
    printf '%b' "$2" >"$B/$1"
    run bounded "$MINI" batch "$B/$1" -o "$B/never" -c mini -c "$B/cfg.yaml"
    if [[ $RC == 2 && $(wc -l <<<"$ERR") == 1 ]] && contains "$ERR" "$3"; then pass "bad tasks ($1): one line, exit 2: $ERR"
    else fail "bad tasks ($1): one line, exit 2, saying '$3'" "rc $RC: $ERR"; fi
}
bad_file syntax.jsonl '{"instance_id": "a", "problem_statement": "x"}\n{"instance_id": \n' "syntax.jsonl:2"
bad_file dup.jsonl '{"instance_id": "a", "problem_statement": "x"}\n{"instance_id": "a", "problem_statement": "y"}\n' 'instance_id "a" is given twice'
bad_file slash.jsonl '{"instance_id": "a/../../up", "problem_statement": "x"}\n' "holds a '/'"
bad_file dots.jsonl '{"instance_id": "..", "problem_statement": "x"}\n' "starts with '.'"
bad_file noid.yaml '- problem_statement: x\n' "instance_id (a string) is required"
bad_file list.yaml 'instance_id: a\n' "expected a list of tasks"
bad_file ws.jsonl '{"instance_id": "a", "problem_statement": "x", "workspace": {"git": "r", "path": "p"}}\n' "either path or git"
if [[ ! -e $B/never/preds.json ]]; then pass "a bad task file writes no preds.json"; else fail "a bad task file writes no preds.json"; fi
run bounded "$MINI" batch "$B/tasks.jsonl" -o "$B/never" -c mini -c "$B/cfg.yaml" --sandbox stric
if [[ $RC == 2 ]] && contains "$ERR" "mini batch: --sandbox stric: no such sandbox profile; did you mean strict?"; then
    pass "an unknown profile: one line with the closest name, exit 2, before anything runs"
else fail "an unknown profile: one line with the closest name, exit 2" "rc $RC: $ERR"; fi

# The workers share one daemon, started for the batch when none listens.
mkdir -m 0700 "$T/rt"
run bounded env XDG_RUNTIME_DIR="$T/rt" NO_COLOR=1 "$MINI" batch "$B/tasks.jsonl" --slice :4 -o "$B/own" -w 2 \
    -c mini -c "$B/cfg.yaml" --sandbox strict
rc_is "no daemon listening: the batch starts one for its workers, exit 0" 0
if [[ -z $(pgrep -f "mini-sandboxd --socket $T/rt/mini/batch-" || true) && ! -e $T/rt/mini/batch-*.sock ]]; then
    pass "the batch's own daemon is stopped and its socket removed"
else fail "the batch's own daemon is stopped and its socket removed"; fi
finish

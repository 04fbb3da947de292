#!/bin/bash
# `mini batch slurm` on a real single-node Slurm cluster (label
# cluster): Debian's slurmctld, slurmd and munged, started here with every
# file under the test's temp dir (slurm_lib.sh), run a 4-shard array over
# 20 tasks under the strict sandbox; `mini batch merge` joins the shards
# and preds.json is checked; the cluster is stopped by pid.  Root only
# (slurmd runs jobs as their submitter); 77 when Slurm is not installed.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/slurm_lib.sh"
mini_test_init "$@"
is_root || skip_all "the Slurm test runs as root (slurmd)"
slurm_available 2>/dev/null || skip_all "Slurm is not installed (slurmctld slurmd slurm-client munge)"
have python3 || skip_all "python3 is missing"

start_daemon
C=$T/c
mkdir -p "$C"
cleanup_cmd slurm_stop
if ! slurm_start "$C" >"$T/slurm-start.log" 2>&1; then
    fail "a single-node Slurm cluster starts" "$(tail -n 40 "$T/slurm-start.log")"
    finish
fi
pass "a single-node Slurm cluster starts (SLURM_CONF=$SLURM_CONF)"

B=$T/b
mkdir -p "$B"
cat >"$B/cfg.yaml" <<'EOF'
model:
  model_class: deterministic
  cost_per_call: 0.5
  outputs:
    - "Look.\n```mswea_bash_command\nls\n```"
    - "Submit.\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; echo patch-of-$(basename $(dirname $PWD))\n```"
EOF
python3 -c '
import json
for i in range(20):
    print(json.dumps({"instance_id": f"s-{i:02d}", "problem_statement": f"task {i}", "verify": "true"}))' >"$B/tasks.jsonl"

# The script, first printed.
run bounded "$MINI_BIN/mini" batch slurm "$B/tasks.jsonl" -o "$B/out" --shards 4 --dry-run -w 2 -c mini \
    -c "$B/cfg.yaml" -c "environment.socket=$SOCK" --sandbox strict -- --partition=debug
if [[ $RC == 0 ]] && contains "$OUT" "#SBATCH --array=0-3" && contains "$OUT" "#SBATCH --partition=debug" &&
    contains "$OUT" "--shard \"\$shard\"/4" && [[ ! -e $B/out/slurm/batch.sbatch ]]; then
    pass "--dry-run prints the array script (0-3, the sbatch options, the shard) and submits nothing"
else fail "--dry-run prints the array script" "$OUT $ERR"; fi

run bounded "$MINI_BIN/mini" batch slurm "$B/tasks.jsonl" -o "$B/out" --shards 4 -w 2 -c mini \
    -c "$B/cfg.yaml" -c "environment.socket=$SOCK" --sandbox strict -- --partition=debug
job=${OUT%%;*}
if [[ $RC == 0 && $job =~ ^[0-9]+$ ]]; then pass "mini batch slurm submits the array (job $job)"
else fail "mini batch slurm submits the array" "rc $RC: $OUT $ERR"; finish; fi
if slurm_wait_job "$job" 180; then pass "the array's 4 tasks leave the queue"
else fail "the array's 4 tasks leave the queue" "$(squeue 2>&1)"; fi
for i in 0 1 2 3; do
    if [[ -s $B/out/shard-$i/preds.json ]]; then pass "shard $i wrote its preds.json"
    else fail "shard $i wrote its preds.json" "$(cat "$B"/out/slurm/*_"$i".log 2>/dev/null | tail -n 20)"; fi
done

run bounded "$MINI_BIN/mini" batch merge "$B"/out/shard-* -o "$B/out" --tasks "$B/tasks.jsonl"
if [[ $RC == 0 ]]; then pass "merge of the 4 shards"; else fail "merge of the 4 shards" "$ERR"; fi
run python3 - "$B/out" <<'EOF'
import json, os, sys
d = sys.argv[1]
preds = json.load(open(os.path.join(d, "preds.json")))
s = json.load(open(os.path.join(d, "summary.json")))
bad = [i for i, p in preds.items() if p["model_patch"] != f"patch-of-{i}\n"]
# Each task ran in the output of the array task of its shard: the hash of
# its id (FNV-1a 64, modulo 4), as mini batch --shard computes it.
def shard(i):
    h = 14695981039346656037
    for c in i.encode():
        h = ((h ^ c) * 1099511628211) % 2**64
    return h % 4
shards = {i: [k for k in range(4) if os.path.exists(os.path.join(d, f"shard-{k}", i, i + ".traj.json"))] for i in preds}
wrong = [i for i, ks in shards.items() if ks != [shard(i)]]
print(len(preds), len(shards), bad, wrong, s["totals"]["resolved"])
EOF
if [[ $OUT == "20 20 [] [] 20" ]]; then pass "preds.json: 20 tasks, each run by the array task of its shard, all resolved"
else fail "preds.json: 20 tasks, each run by the array task of its shard, all resolved" "$OUT $ERR"; fi

slurm_stop
if [[ -z $(pgrep -f "$C/" || true) ]]; then pass "the cluster is stopped: no daemon of it is left"
else fail "the cluster is stopped: no daemon of it is left" "$(pgrep -af "$C/")"; fi
finish

#!/bin/bash
# `mini batch`'s group commit (docs/batch.md, "Durability"): no file is
# synced on its own, so after a power loss any file written since the last
# commit may be empty or old.  A resume must never trust such a file:
#  1. a result.json truncated to 0 bytes, one of garbage, a trajectory
#     truncated to 0 bytes, a result.json that disagrees with preds.json:
#     each task runs again, with a line naming it; the others do not run;
#  2. preds.json truncated to 0 bytes: moved aside and rebuilt from the
#     tasks' result.json files, exactly as it was; nothing runs again;
#  3. preds.json of garbage while a task's result.json is empty and another
#     is an interrupted task's: rebuilt without those two, which run again;
#  4. summary.json of garbage: moved aside, rebuilt whole from the tasks'
#     files; nothing runs again.
#  5. group commits that fail (an ext4 image whose disk is full, as root;
#     one after every task, MINI_BATCH_COMMIT_INTERVAL=0): said once while
#     the batch runs (and at its end when the last fails too), exit 1, the
#     output resumable.
# The group commit itself: the batch says how many it made (MINI_BATCH_TIMING).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
have python3 || skip_all "python3 is missing"

MINI=$MINI_BIN/mini
start_daemon
B=$T/batch
mkdir -p "$B"
cd "$B" || exit 1
if is_root; then chmod a+rX "$B"; fi

cat >"$B/cfg.yaml" <<'EOF'
model:
  model_class: deterministic
  outputs:
    - "Working.\n```mswea_bash_command\necho ok\n```"
    - "Submit.\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; echo patch-$(date +%s%N)\n```"
EOF
python3 -c '
import json
for i in range(6):
    print(json.dumps({"instance_id": f"t-{i}", "problem_statement": f"number {i}"}))' >"$B/tasks.jsonl"
O=$B/out
batch() { run bounded env NO_COLOR=1 MINI_BATCH_TIMING=1 ${MINI_BATCH_COMMIT_INTERVAL:+MINI_BATCH_COMMIT_INTERVAL=$MINI_BATCH_COMMIT_INTERVAL} "$MINI" batch "$B/tasks.jsonl" -o "$O" -c mini -c "$B/cfg.yaml" \
    -c "environment.socket=$SOCK" --sandbox strict; }
# sums: each task's trajectory's hash (a task that ran again has a new one:
# its patch holds the time).
sums() {
    python3 - "$O" <<'EOF'
import hashlib, os, sys
d = sys.argv[1]
for i in range(6):
    p = os.path.join(d, f"t-{i}", f"t-{i}.traj.json")
    print(f"t-{i}", hashlib.sha256(open(p, "rb").read()).hexdigest() if os.path.exists(p) else "-")
EOF
}
# ran_again BEFORE: the tasks whose trajectory changed since BEFORE.
ran_again() { comm -13 <(printf '%s\n' "$1") <(sums) | cut -d' ' -f1 | tr '\n' ' ' | sed 's/ $//'; }
# whole: preds.json and summary.json hold all six, agreeing with their result.json.
whole() {
    run python3 - "$O" <<'EOF'
import json, os, sys
d = sys.argv[1]
p = json.load(open(os.path.join(d, "preds.json")))
s = json.load(open(os.path.join(d, "summary.json")))
ids = [f"t-{i}" for i in range(6)]
r = {i: json.load(open(os.path.join(d, i, "result.json"))) for i in ids}
ok = (sorted(p) == sorted(s["tasks"]) == ids and s["totals"]["tasks"] == 6 and
      all(p[i]["model_patch"] == r[i]["submission"] == s["tasks"][i]["submission"] != "" for i in ids))
print("ok" if ok else f"preds {p} summary {s}")
EOF
}

batch
if [[ $RC == 0 ]] && contains "$ERR" "this run: 6 finished"; then pass "6 tasks finished"; else fail "6 tasks finished" "$RC $ERR"; fi
if [[ $ERR =~ ([0-9]+)\ group\ commits ]] && ((BASH_REMATCH[1] >= 1)); then pass "the batch made ${BASH_REMATCH[1]} group commit(s)"
else fail "the batch made a group commit" "$ERR"; fi

# ---- 1. damaged task files ---------------------------------------------------------
before=$(sums)
: >"$O/t-0/result.json"
printf '\0\0\0garbage' >"$O/t-1/result.json"
: >"$O/t-2/t-2.traj.json"
python3 - "$O/t-3/result.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
r["submission"] = "another patch"
json.dump(r, open(sys.argv[1], "w"))
EOF
batch
if [[ $RC == 0 ]] && contains "$ERR" "2 done in an earlier run, 4 to run"; then pass "damaged task files: 4 tasks to run again"
else fail "damaged task files: 4 tasks to run again" "$RC $ERR"; fi
err=$ERR
for want in "t-0: its result.json is empty or damaged" "t-1: its result.json is empty or damaged" \
    "t-2: its trajectory is empty, damaged or another run's" "t-3: its result.json disagrees with preds.json"; do
    check "a line says: $want" contains "$err" "mini batch: $want (a power loss?): it runs again"
done
same_ran=$(ran_again "$before")
if [[ $same_ran == "t-0 t-1 t-2 t-3" ]]; then pass "exactly those ran again"; else fail "exactly those ran again" "$same_ran"; fi
whole
check "the output is whole again" test "$OUT" = ok

# ---- 2. preds.json truncated to 0 bytes -------------------------------------------
cp "$O/preds.json" "$T/preds.before"
before=$(sums)
: >"$O/preds.json"
batch
if [[ $RC == 0 ]] && contains "$ERR" "preds.json is empty (a power loss?): moved to $O/preds.json.damaged" &&
    contains "$ERR" "preds.json rebuilt from the result.json of 6 finished tasks" &&
    contains "$ERR" "6 done in an earlier run, 0 to run"; then pass "an empty preds.json: rebuilt from the 6 result.json, said"
else fail "an empty preds.json: rebuilt from the 6 result.json, said" "$RC $ERR"; fi
check "the empty one is kept aside" test -e "$O/preds.json.damaged" -a ! -s "$O/preds.json.damaged"
check "nothing ran again" test -z "$(ran_again "$before")"
run python3 -c 'import json,sys; print(json.load(open(sys.argv[1])) == json.load(open(sys.argv[2])))' "$T/preds.before" "$O/preds.json"
check "preds.json is as it was" test "$OUT" = True

# ---- 3. preds.json of garbage, one result.json empty, one interrupted --------------
before=$(sums)
printf '{"t-0": {"model_patch": ' >"$O/preds.json"
: >"$O/t-4/result.json"
python3 - "$O/t-5/result.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
r["exit_status"] = "KeyboardInterrupt"
json.dump(r, open(sys.argv[1], "w"))
EOF
batch
if [[ $RC == 0 ]] && contains "$ERR" "preds.json is not a JSON object (a power loss?)" &&
    contains "$ERR" "preds.json rebuilt from the result.json of 4 finished tasks" &&
    contains "$ERR" "t-4: its result.json is empty or damaged: it runs again" &&
    contains "$ERR" "t-5: its result.json is not a finished task's: it runs again" &&
    contains "$ERR" "4 done in an earlier run, 2 to run"; then pass "garbage preds.json: rebuilt from 4; the empty and the interrupted task run again"
else fail "garbage preds.json: rebuilt from 4; the empty and the interrupted task run again" "$RC $ERR"; fi
same_ran=$(ran_again "$before")
if [[ $same_ran == "t-4 t-5" ]]; then pass "exactly those ran again"; else fail "exactly those ran again" "$same_ran"; fi
whole
check "the output is whole again" test "$OUT" = ok

# ---- 4. summary.json of garbage ----------------------------------------------------
before=$(sums)
printf 'garbage' >"$O/summary.json"
batch
if [[ $RC == 0 ]] && contains "$ERR" "summary.json is not a JSON object (a power loss?): moved to $O/summary.json.damaged" &&
    contains "$ERR" "6 done in an earlier run, 0 to run"; then pass "garbage summary.json: moved aside, nothing to run"
else fail "garbage summary.json: moved aside, nothing to run" "$RC $ERR"; fi
check "nothing ran again" test -z "$(ran_again "$before")"
whole
check "summary.json is whole again, from the tasks' files" test "$OUT" = ok

# ---- 5. a group commit that fails ------------------------------------------------
# An ext4 image on a tmpfs too small for it, loop-mounted: the disk's writes
# fail, and so does the syncfs() of a group commit (root only).
if is_root && have mkfs.ext4 && mkdir "$T/eio" && mount -t tmpfs -o size=6m tmpfs "$T/eio" 2>/dev/null; then
    cleanup_cmd "umount -l $T/eio"
    truncate -s 64M "$T/eio/img"
    mkfs.ext4 -q -O ^has_journal -E nodiscard "$T/eio/img"
    mkdir "$T/eio/mnt"
    if mount -o loop,errors=continue "$T/eio/img" "$T/eio/mnt" 2>/dev/null; then
        cleanup_cmd "umount -l $T/eio/mnt"
        chmod 0755 "$T/eio/mnt"
        dd if=/dev/zero of="$T/eio/mnt/big" bs=1M count=16 status=none # dirty, more than the tmpfs holds
        O=$T/eio/mnt/out
        # A commit after every task (in the background), each failing.
        MINI_BATCH_COMMIT_INTERVAL=0 batch
        said=$(grep -c "syncing $O to disk: what finished since the last sync may not survive a power loss: Input/output error" <<<"$ERR")
        # Once while it runs, and again at the end if the last commit fails
        # too (a page whose write failed is not written again: the first
        # failure is enough for exit 1).
        if [[ $RC == 1 ]] && ((said == 1 || said == 2)) && contains "$ERR" "this run: 6 finished"; then
            pass "failing group commits are said (EIO) once while the batch runs (and at its end), exit 1, the tasks finished"
        else fail "failing group commits are said (EIO) once while the batch runs (and at its end), exit 1" "$RC $ERR"; fi
        # The disk still fails: pages whose write failed may read back
        # empty, so a task can be found damaged and run again (and its new
        # files fail the same way).  What must hold: the resume runs, says
        # so, and accounts for every task.
        batch
        if [[ $RC == 0 || $RC == 1 ]] && contains "$ERR" ": 6 tasks," &&
            { contains "$ERR" "6 done in an earlier run, 0 to run" || contains "$ERR" "(a power loss?): it runs again"; }; then
            pass "the output stays resumable on the failing disk: every task accounted for"
        else fail "the output stays resumable on the failing disk" "$RC $ERR"; fi
    else
        skip "a failing group commit" "no loop device to mount an image on"
    fi
else
    skip "a failing group commit" "needs root, mkfs.ext4 and mount"
fi

finish

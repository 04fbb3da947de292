#!/usr/bin/env bash
# `mini batch` in a terminal (tmux): the live progress table (the header
# with done, failed, running, cost, elapsed and ETA; a line per running
# task with its step and cost), then Ctrl-C: no task is started after it,
# the running ones end, the batch exits 130, no interrupted task is
# recorded, and the same command finishes the rest.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/tmux.sh"
ui_init "$@"

B=$T/batch
mkdir -p "$B"
cat >"$B/cfg.yaml" <<'EOF'
model:
  model_class: deterministic
  cost_per_call: 0.25
  outputs:
    - "One.\n```mswea_bash_command\nsleep 1; echo a\n```"
    - "Two.\n```mswea_bash_command\nsleep 1; echo b\n```"
    - "Submit.\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"
EOF
# A sleep of this run's own, to find its processes among other tests'.
SL=$(printf '1.%04d' $((RANDOM % 10000)))
sed -i "s/sleep 1;/sleep $SL;/" "$B/cfg.yaml"
python3 -c '
import json
for i in range(12):
    print(json.dumps({"instance_id": f"job-{i:02d}", "problem_statement": f"n {i}"}))' >"$B/tasks.jsonl"
if is_root; then chmod -R a+rX "$B"; fi
env_args=(--sandbox off)
[[ $UI_ENV == sandbox ]] && env_args=(--sandbox strict)

batch_start() {
    TMUX_N=$((TMUX_N + 1))
    TMUX_SOCK=$T/tmux.$TMUX_N.sock
    mini_env
    local q
    q=$(printf '%q ' "${MINI_ENVV[@]}" "$MINI_BIN/mini" batch "$B/tasks.jsonl" -o "$B/out" -w 3 -c mini \
        -c "$B/cfg.yaml" "${env_args[@]}")
    tmux -S "$TMUX_SOCK" -f /dev/null new-session -d -x 150 -y 50 -s t "sleep 1000"
    tmux -S "$TMUX_SOCK" set-option -g remain-on-exit on
    tmux -S "$TMUX_SOCK" respawn-pane -k -t t "cd $(printf '%q' "$B") && exec $q"
}

batch_start
screen_wait "3 running" 30
screen
if grep -Eq '^mini batch: [0-9]+/12 done, [0-9]+ failed, 3 running, \$[0-9.]+, [0-9]+s elapsed, ETA' <<<"$SCREEN"; then
    pass "the header: done, failed, running, cost, elapsed, ETA"
else fail "the header: done, failed, running, cost, elapsed, ETA" "$SCREEN"; fi
if grep -Eq '^  job-[0-9]+ +step +[0-9]+  \$[0-9.]+  [0-9]+s$' <<<"$SCREEN"; then pass "a line per running task: step, cost, time"
else fail "a line per running task: step, cost, time" "$SCREEN"; fi
screen_wait "[3/12] job-" 30
# The table is redrawn in place: one header on the screen, not one per redraw.
sleep 1
screen
n=$(grep -c ' running, \$' <<<"$SCREEN")
if [[ $n == 1 ]]; then pass "the table is redrawn in place"; else fail "the table is redrawn in place" "$n headers"; fi

keys C-c
screen_wait "interrupted: starting no more tasks" 10
mini_wait_exit 60
check_rc "Ctrl-C: the batch ends with 130 once the running tasks have ended" 130
run python3 - "$B/out" <<'EOF'
import json, os, sys
d = sys.argv[1]
preds = json.load(open(os.path.join(d, "preds.json")))
started = [i for i in os.listdir(d) if i.startswith("job-")]
bad = [i for i in preds if json.load(open(os.path.join(d, i, "result.json")))["exit_status"] != "Submitted"]
print(len(preds), len(started), bad)
EOF
read -r recorded started bad <<<"$OUT"
if (( recorded < 12 && started < 12 )) && [[ $bad == "[]" ]]; then
    pass "after Ctrl-C: $recorded recorded, $started started, no interrupted task in preds.json"
else fail "after Ctrl-C: some tasks not started, no interrupted task recorded" "$OUT $ERR"; fi
if wait_until 10 no_process "sleep $SL"; then pass "no command of the batch is left running"; else fail "no command of the batch is left running"; fi

# The same command, again: the rest, then the totals.
batch_start
mini_wait_exit 90
check_rc "the same command again finishes the batch: 0" 0
run python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$B/out/preds.json"
if [[ $OUT == 12 ]]; then pass "all 12 tasks recorded after the resume"; else fail "all 12 tasks recorded after the resume" "$OUT"; fi
screen
if grep -q "in $B/out: 12 tasks, 12 submitted" <<<"$SCREEN"; then pass "the closing line gives the totals"
else fail "the closing line gives the totals" "$(tail -5 <<<"$SCREEN")"; fi
ui_finish

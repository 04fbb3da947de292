#!/usr/bin/env bash
# Limits and the end of a run in a terminal: the step-limit question (new
# limits go on; Enter twice stops with LimitsExceeded), a new task typed at
# the exit question goes on with the same trajectory.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/tmux.sh"
ui_init "$@"

tag=$RUN_TAG

# ---- the limit question, then a new task at the exit question ------------
mock_start "$(turns "$(turn "First." "echo first-$tag")" "$(submit_turn "Done." "done-one-$tag")" \
                    "$(turn "On it." "echo second-task-$tag")" "$(submit_turn "Done again." "done-two-$tag")")"
mini_start -y -c agent.step_limit=1 -t "do one thing"
screen_wait "Limits reached."
check "the limits are shown" screen_has "Limits: 1 steps"
check "what was spent is shown" screen_has "Spent: 1 steps"
screen_wait "New step limit?"
type_line "many"
screen_wait "Not a whole number" && pass "a bad number is refused and asked again"
type_line "10"
screen_wait "New cost limit in dollars?"
keys Enter
screen_wait "Going on with limits of 10 steps" && pass "new limits let the run go on"
screen_wait "The model wants to finish"
type_line "now also print the second task $tag"
screen_wait "second-task-$tag" 30 2 && pass "a new task at the exit question goes on"
request_has "the new task reaches the model" 2 user "now also print the second task $tag"
screen_wait "The model wants to finish" 30 2
keys Enter
mini_wait_exit
check_rc "the run ends: status 0" 0
check_traj_status "the trajectory says Submitted" Submitted
check "one trajectory holds both tasks" \
    test "$(traj_py 't["info"]["submission"].strip()')" = "done-two-$tag"

# ---- Enter twice at the limit question stops -------------------------------
mock_start "$(turns "$(turn "First." "echo first-$tag")" "$(submit_turn)")"
mini_start -y -c agent.step_limit=1 -t "do one thing"
screen_wait "New step limit?"
keys Enter
screen_wait "New cost limit in dollars?"
keys Enter
mini_wait_exit
check_rc "unchanged limits stop the run: status 1" 1
check_traj_status "the trajectory says LimitsExceeded" LimitsExceeded
check "one model call only" test "$(n_requests)" -eq 1

# ---- the wall-time limit always stops, without asking ----------------------
mock_start "$(turns "$(turn "Slow." "sleep 3")" "$(submit_turn)")"
mini_start -y -c agent.wall_time_limit_seconds=1 -t "take your time"
mini_wait_exit
check_rc "the wall-time limit stops the run: status 1" 1
check_traj_status "the trajectory says TimeExceeded" TimeExceeded
check "no limit question for the wall time" test "$(screen_count "New step limit?")" -eq 0

ui_finish

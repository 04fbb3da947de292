#!/usr/bin/env bash
# Ctrl-C in a terminal: during a long command (it is killed, the sandbox
# cancelled, the comment reaches the model, the run goes on), while the
# model thinks (Enter goes on with nothing added), at a question (Ctrl-C
# again, or Ctrl-D twice, ends the run with status 130 and the trajectory
# saved).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/tmux.sh"
ui_init "$@"

tag=$RUN_TAG
long="sleep 300.$tag"
slow=$(python3 -c 'import json,sys; print(json.dumps({"delay": 120, "text": "slow", "tool_calls": [{"command": sys.argv[1]}]}))' "echo never-$tag")
mock_start "$(turns "$(turn "Long." "echo started-$tag; $long; echo finished-$tag")" \
                    "$(turn "Short." "echo after-$tag")" "$slow" \
                    "$(turn "Again." "echo resumed-$tag")" "$(submit_turn)")"
mini_start -y --exit-immediately -t "wait a while"
screen_wait "started-$tag" 30 2
if wait_until 10 has_process "$long"; then pass "the long command runs"; else fail "the long command runs"; fi
keys C-c
screen_wait "Interrupted."
if wait_until 10 no_process "$long"; then
    pass "Ctrl-C kills the running command"
else
    fail "Ctrl-C kills the running command" "$(pgrep -af "$long")"
fi
check "the command is shown as interrupted" screen_has "interrupted after"
screen
check "it did not finish" test "$(printf '%s\n' "$SCREEN" | grep -cx "finished-$tag")" -eq 0
type_line "please avoid sleeping $tag"
screen_wait "after-$tag" 30 2 && pass "the run goes on after the comment (the sandbox still works)"
request_has "the interrupted command's output reaches the model" 1 tool "was interrupted"
request_has "the comment reaches the model" 1 user "please avoid sleeping $tag"

# The model is slow to answer: Ctrl-C while it thinks, Enter goes on.
screen_wait "Waiting for the model" && pass "a spinner shows while the model thinks"
keys C-c
screen_wait "Interrupted." 30 2
keys Enter
screen_wait "resumed-$tag" 30 2 && pass "Enter at the interrupt question goes on"
check "the slow answer was dropped" test "$(screen_count "never-$tag")" -eq 0
check "nothing was added for an empty comment" \
    test "$(request_py 3 'len(msgs)')" = "$(request_py 2 'len(msgs)')"
mini_wait_exit
check_rc "the run ends: status 0" 0

# Ctrl-C at the question, then Ctrl-C again: the run ends, saved.
mock_start "$(turns "$(turn "Try." "echo should-not-run-$tag")" "$(submit_turn)")"
mini_start -t "stop me"
screen_wait "Run this command?"
keys C-c
screen_wait "Interrupted."
keys C-c
mini_wait_exit
check_rc "a second Ctrl-C ends the run: status 130" 130
check_traj_status "the trajectory says KeyboardInterrupt" KeyboardInterrupt
check "the command did not run" test "$(screen_count "should-not-run-$tag")" -eq 1
check "the trajectory answers the tool call" \
    test "$(traj_py 'sum(1 for m in t["messages"] if m["role"] == "tool")')" = 1

# Ctrl-D (end of input) at the questions: never loops, ends the same way.
mock_start "$(turns "$(turn "Try." "echo should-not-run-$tag")" "$(submit_turn)")"
mini_start -t "end of input"
screen_wait "Run this command?"
keys C-d
screen_wait "Interrupted."
keys C-d
mini_wait_exit
check_rc "Ctrl-D twice ends the run: status 130" 130
check_traj_status "the trajectory is saved" KeyboardInterrupt

# Ctrl-C at the task question: nothing runs.
mock_start "[]"
mini_start
screen_wait "What do you want to do?"
keys C-c
mini_wait_exit
check_rc "Ctrl-C at the task question: status 130" 130
check "no model request" test "$(n_requests)" -eq 0

ui_finish

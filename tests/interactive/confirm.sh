#!/usr/bin/env bash
# Confirm mode in a terminal: the task prompt, Enter runs a step's command,
# text rejects it and reaches the model as the reason, /h and /c, the exit
# prompt, colours (and none with NO_COLOR), the history file.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/tmux.sh"
ui_init "$@"

tag=$RUN_TAG
mock_start "$(turns "$(turn "Looking first." "echo first-$tag")" \
                    "$(turn "Now this." "echo second-$tag")" \
                    "$(submit_turn "Finished." "result-$tag")")"
mini_start
if screen_wait "What do you want to do?"; then
    pass "asks for the task when -t is not given"
fi
type_line "count the files $tag"
screen_wait "Run this command?" &&
    check "the command is shown before it runs" screen_has "echo first-$tag"
check "nothing ran before the answer" test "$(screen_count "first-$tag")" -eq 1
request_has "the task typed at the prompt reaches the model" 0 user "count the files $tag"
type_line "/h"
screen_wait "/u  human mode" && pass "/h lists the slash commands"
type_line "/c"
screen_wait "Already in confirm mode" && pass "/c in confirm mode says so"
keys Enter
# The question was asked again after /h and /c: the 4th is the second step's.
screen_wait "Run this command?" 30 4
check "Enter runs the command (its output is shown once)" test "$(screen_count "first-$tag")" -eq 2
check "the next step's command is shown" screen_has "echo second-$tag"
# The reason, on two lines (/m).
type_line "/m"
screen_wait "Several lines"
type_line "no, count"
type_line "with wc $tag"
type_line "."
screen_wait "Run this command?" 30 5
keys Enter
screen_wait "The model wants to finish"
check "the rejected command did not run" test "$(screen_count "second-$tag")" -eq 1
request_has "the rejection reason (two lines, /m) reaches the model" 2 user "no, count"$'\n'"with wc $tag"
request_has "the rejected tool call is answered" 2 tool "not executed"
check "the submit command ran after the third step's question" test "$(screen_count "Run this command?")" -eq 5
keys Enter
mini_wait_exit
check_rc "Enter at the exit prompt ends the run: status 0" 0
check_traj_status "the trajectory says Submitted" Submitted
screen -e
check "colours on a terminal" contains "$SCREEN" $'\e['
check "the task is in the history file" grep -q "files.040$tag" "$T/cfg/mini_task_history"
check "the history files are private" test "$(stat -c %a "$T/cfg/mini_input_history")" = 600

# NO_COLOR: the same terminal, no colours.
mock_start "$(turns "$(submit_turn "Finished." "result-$tag")")"
MINI_EXTRA_ENV=(NO_COLOR=1)
mini_start --exit-immediately -t "say done"
screen_wait "Run this command?"
keys Enter
mini_wait_exit
check_rc "NO_COLOR run ends" 0
screen -e
RC=0 OUT=$SCREEN ERR=
if [[ $SCREEN == *$'\e['[0-9]*m* ]]; then
    fail "NO_COLOR: no colour sequences"
else
    pass "NO_COLOR: no colour sequences"
fi
MINI_EXTRA_ENV=()

ui_finish

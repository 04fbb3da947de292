#!/usr/bin/env bash
# Modes in a terminal: /y at the first question and the rest runs unasked;
# agent.whitelist_actions; human mode (the person's command runs, its output
# reaches the model; /c hands back to the model).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/tmux.sh"
ui_init "$@"

tag=$RUN_TAG

# ---- /y: the rest runs without asking ------------------------------------
mock_start "$(turns "$(turn "One." "echo one-$tag")" "$(turn "Two." "echo two-$tag")" \
                    "$(turn "Three." "echo three-$tag" "echo four-$tag")" "$(submit_turn)")"
mini_start -t "count to four"
screen_wait "Run this command?"
type_line "/y"
screen_wait "Switched to yolo mode" && pass "/y switches to yolo mode"
screen_wait "The model wants to finish"
check "after /y nothing more was asked" test "$(screen_count "Run this command?")" -eq 1
check "every command ran (two of them in one step)" \
    test "$(screen_count "one-$tag")" -eq 2 -a "$(screen_count "two-$tag")" -eq 2 -a "$(screen_count "four-$tag")" -eq 3
check "the rule shows the mode" screen_has "step 2, yolo mode"
keys Enter
mini_wait_exit
check_rc "/y run ends: status 0" 0

# ---- the whitelist ---------------------------------------------------------
mock_start "$(turns "$(turn "Safe." "ls -d /")" "$(turn "Also safe." "echo safe-$tag")" \
                    "$(turn "Not listed." "echo unlisted-$tag")" "$(turn "Mixed." "ls -d /" "echo mixed-$tag")" \
                    "$(submit_turn)")"
# re.match: anchored at the start only ("echo safe" matches "echo safe-N").
mini_start --exit-immediately -c 'agent.whitelist_actions=["ls\\b", "echo safe"]' -t "look around"
screen_wait "Run this command?"
check "whitelisted commands ran without a question" test "$(screen_count "safe-$tag")" -eq 2
check "the whitelisted run is marked" screen_has "whitelisted"
check "an unlisted command is asked about" test "$(screen_count "unlisted-$tag")" -eq 1
keys Enter
screen_wait "Run these 2 commands?" && pass "a step with one unlisted command asks (both shown)"
keys Enter
screen_wait "Run this command?" 30 2
keys Enter
mini_wait_exit
check_rc "whitelist run ends: status 0" 0

mini_start --exit-immediately -c 'agent.whitelist_actions=["("]' -t "bad regex"
mini_wait_exit
check_rc "an invalid whitelist regex is a config error: status 2" 2
check "the bad entry is named" contains "$SCREEN" "agent.whitelist_actions[0]"

# ---- human mode ------------------------------------------------------------
mock_start "$(turns "$(submit_turn "Thanks." "human-done-$tag")")"
mini_start -c agent.mode=human -t "let me do it"
screen_wait "Your command?"
check "human mode asks the person first (no model request yet)" test "$(n_requests)" -eq 0
type_line "echo typed-by-human-$tag; echo second line"
screen_wait "Your command?" 30 2
check "the person's command ran" test "$(screen_count "typed-by-human-$tag")" -ge 3
check "still no model request" test "$(n_requests)" -eq 0
type_line "/c"
screen_wait "Run this command?"
request_has "the person's command reaches the model" 0 user "echo typed-by-human-$tag"
request_has "its output reaches the model" 0 user "typed-by-human-$tag"$'\n'"second line"
keys Enter
screen_wait "The model wants to finish"
keys Enter
mini_wait_exit
check_rc "human run ends: status 0" 0
check "the person's command is a user message with the action" \
    test "$(traj_py '[m["extra"]["actions"][0]["command"] for m in t["messages"] if m["role"] == "user" and m.get("extra", {}).get("actions")]')" \
    = "['echo typed-by-human-$tag; echo second line']"

ui_finish

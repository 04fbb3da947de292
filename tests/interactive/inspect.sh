#!/usr/bin/env bash
# `mini inspect` in a terminal (tmux): the folder list (exit status,
# steps, cost, resolved from summary.json; broken files as error rows, the
# error in the footer), search in the list, a trajectory step by step
# (next/previous, first/last, the prompts toggle, scrolling with the
# "more below" marker, search across steps, next/previous trajectory),
# hostile output shown as visible text (the window title stays), resize,
# back to the list, q; a single file opens directly.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/tmux.sh"
mini_test_init "$@"
have tmux || skip_all "tmux is not installed (apt-get install tmux)"
have python3 || skip_all "python3 is not installed"
cleanup_cmd ui_cleanup

F=$T/runs
python3 "$MINI_SOURCE_DIR/tests/integration/inspect_fixtures.py" "$F" >"$T/facts.json"

# inspect_start ARGS...: mini inspect in a fresh 150x40 terminal.
inspect_start() {
    TMUX_N=$((TMUX_N + 1))
    TMUX_SOCK=$T/tmux.$TMUX_N.sock
    MINI_RC=
    local q
    q=$(printf '%q ' env -i PATH="$PATH" HOME="$T" TERM=screen LANG="$(ui_locale)" "$MINI_BIN/mini" inspect "$@")
    tmux -S "$TMUX_SOCK" -f /dev/null new-session -d -x 150 -y 40 -s t "sleep 1000"
    tmux -S "$TMUX_SOCK" set-option -g remain-on-exit on
    tmux -S "$TMUX_SOCK" respawn-pane -k -t t "exec $q"
}
# The visible screen only (the browser redraws it; no scrollback).
visible() { SCREEN=$(tm capture-pane -p -t t 2>/dev/null || true); }
# screen_line_has NAME REGEX: a line of the visible screen matches.
screen_line() {
    visible
    if grep -Eq -- "$2" <<<"$SCREEN"; then pass "$1"
    else fail "$1" "no line matches: $2" "$(sed 's/^/    | /' <<<"$SCREEN" | head -45)"; fi
}
# The visible screen, once it has settled on TEXT.
wait_visible() { screen_wait "$1" "${2:-10}"; sleep 0.2; visible; }

inspect_start "$F"
wait_visible "11 trajectories, 4 unreadable"
screen_line "list: alpha-1 with exit status, steps, cost, resolved" '^ +alpha-1 +Submitted +3 +\$0\.5000 +yes'
screen_line "list: beta-2 not resolved" '^ +beta-2 +LimitsExceeded +1 +\$12\.50 +no'
screen_line "list: gamma-3 not verified" '^ +gamma-3 +Submitted +2 +\$0\.0000 +-$'
screen_line "list: a truncated file is an error row" '^ +truncated +error: line [0-9]+, column [0-9]+: the file ends inside a value'
screen_line "list: the footer shows the keys" 'Enter open .* q quit'
keys j j
sleep 0.3
screen_line "list: on a broken row, the footer names the file and the place" "broken/empty.traj.json: line 1, column 1: the file is empty"
keys Enter
sleep 0.3
screen_line "list: Enter on a broken row opens its error" '^error: line 1, column 1: the file is empty'
keys Escape
wait_visible "11 trajectories"

# Search in the list, open the hostile trajectory.
keys /
tm send-keys -t t -l "hostile"
keys Enter
sleep 0.3
screen_line "list search: the hostile row is selected" 'row 11/11'
keys Enter
wait_visible "[11/11] hostile"
screen_line "hostile: escape sequences shown as text" "title\\^\\[\\]0;pwned-title\\^G clear\\^\\[\\[2J"
screen_line "hostile: C1 and bidi controls shown as text" 'csi\\u009b31m bidi\\u202eevil\\u202c'
title=$(tm display-message -p -t t '#{pane_title}')
if [[ $title != *pwned* ]]; then pass "hostile: the window title did not change ($title)"
else fail "hostile: the window title did not change" "pane title: $title"; fi
screen_line "hostile: a 5000-character line wraps (no cut)" '^W{150}$'
keys Escape
wait_visible "11 trajectories"

# A trajectory step by step.
keys g Enter
wait_visible "[1/11] alpha-1"
screen_line "header: trajectory, step, exit status, steps, cost, resolved" \
    '\[1/11\] alpha-1 \| Step 1/3 \| exit: Submitted \| 3 steps \| cost \$0\.5000 \| resolved: yes'
screen_line "header: the task" '^ Task: Fix the FIRST-TASK bug\.'
screen_line "step 1: the assistant message" '^ASSISTANT'
screen_line "step 1: the action" '^\$ ls -la$'
screen_line "step 1: the observation" '^USER \(returncode 0\)'
screen_line "footer: the keys" 'h/l step .* / n N search p prompts Esc list q quit'
keys l
sleep 0.3
screen_line "l: step 2" 'Step 2/3'
screen_line "a long output: the footer marks more below" 'rows 1-37/[0-9]+ \(more below\)'
keys G
sleep 0.3
screen_line "G: the end of the step" 'line 299 LONG-OUTPUT'
visible
if grep -q "more below" <<<"$SCREEN"; then fail "G: no more below at the end" "$SCREEN"; else pass "G: no more below at the end"; fi
keys '$'
sleep 0.3
screen_line '$: the last step' 'Step 3/3'
keys 0
sleep 0.3
screen_line "0: the first step (prompts hidden)" 'Step 1/3'
keys h
sleep 0.3
screen_line "h on the first step stays there" 'Step 1/3'
keys p
sleep 0.3
screen_line "p: the prompts shown" '\| Prompts \|'
screen_line "p: the system prompt" 'SYSTEM-PROMPT-MARK'
keys p
sleep 0.3
screen_line "p again: hidden, back on step 1" 'Step 1/3'

# Search across steps, then the next match.
keys /
tm send-keys -t t -l "needle-in"
keys Enter
sleep 0.3
screen_line "search: found in step 2's output (case-insensitive)" 'Step 2/3'
screen_line "search: the match on the screen" '^NEEDLE-IN-OUTPUT$'
keys /
tm send-keys -t t -l "no-such-text-anywhere"
keys Enter
sleep 0.3
screen_line "search: not found is said" 'not found: no-such-text-anywhere'
keys /
tm send-keys -t t -l "THOUGHT"
keys Enter
sleep 0.3
screen_line "search: the next THOUGHT after step 2 is in step 3" 'Step 3/3'
keys n
sleep 0.3
screen_line "n: round to step 1" 'Step 1/3'
keys N
sleep 0.3
screen_line "N: back to step 3" 'Step 3/3'

# Next and previous trajectory.
keys L
sleep 0.3
screen_line "L: the next trajectory" '\[2/11\] beta-2 \| Step 1/1 \| exit: LimitsExceeded'
keys H
sleep 0.3
screen_line "H: the previous one" '\[1/11\] alpha-1'

# Resize: everything is drawn again for the new size.
keys l
wait_visible "Step 2/3"
tm resize-window -t t -x 60 -y 20
# Drawn again for 20 rows once the footer says so (a loaded machine is slow
# to deliver SIGWINCH and redraw: wait for it, not for a fixed time).
wait_visible "rows 1-17/" 20
w=$(python3 -c 'import sys; print(max(len(l) for l in sys.stdin.read().splitlines()))' <<<"$SCREEN")
n=$(grep -c '' <<<"$SCREEN")
if (( w <= 60 && n <= 20 )); then pass "resize: the screen fits 60x20 (widest line $w, $n lines)"
else fail "resize: the screen fits 60x20" "widest $w, $n lines"; fi
screen_line "resize: the header drawn again, cut with a marker" '^ \[1/11\] alpha-1 \| Step 2/3 .*…$'
screen_line "resize: the footer for the new height" 'rows 1-17/'
tm resize-window -t t -x 150 -y 40
wait_visible "resolved: yes" 20
screen_line "resize back: the full header" 'resolved: yes *$'

keys q
mini_wait_exit 10
check_rc "q quits; exit 1 as files could not be read" 1
if grep -q "mini inspect: $F/broken/garbage.traj.json: line 2, column" <<<"$SCREEN"; then
    pass "after quitting, the unreadable files are listed on the terminal"
else fail "after quitting, the unreadable files are listed on the terminal" "$SCREEN"; fi

# One file: the browser opens on it; Esc does not leave it.
inspect_start "$F/formats/toolcall.traj.json"
wait_visible "[1/1] toolcall"
screen_line "one file: opened directly, reasoning shown" '^~ REASONING-MARK think first'
screen_line "one file: no list to go back to" 'p prompts q quit'
keys Escape
sleep 0.3
screen_line "one file: Esc stays" '\[1/1\] toolcall'
keys C-c
mini_wait_exit 10
check_rc "Ctrl-C quits, exit 0" 0

finish

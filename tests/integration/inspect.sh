#!/usr/bin/env bash
# `mini inspect` without a terminal: the plain text in a pipe
# and the HTML report, over a batch-like folder of trajectories in every
# format mini and mini-swe-agent write, with hostile content (escape
# sequences, </script>, <img onerror>, invalid UTF-8, \u0000, an unpaired
# surrogate, bidi overrides) and broken files (truncated, garbage, empty,
# not a trajectory), which get one-line errors while the rest opens.
# The HTML is loaded in headless Chromium (Debian's `chromium`; those
# checks are skipped without it): the DOM after loading (title unchanged,
# no element or event handler from the trajectory, the step counts, the
# hostile strings as text), and a screenshot that is not empty.  A copy
# with the escaping undone must fail the same checks (the checks can see
# a script that ran).  The fixtures: inspect_fixtures.py.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
have python3 || skip_all "python3 is not installed"

HERE=$MINI_SOURCE_DIR/tests/integration
F=$T/runs
python3 "$HERE/inspect_fixtures.py" "$F" >"$T/facts.json"
MINI=$MINI_BIN/mini

# ---- plain text ----------------------------------------------------------

run "$MINI" inspect --list "$F"
check "--list: exit 1 when some files could not be read" test "$RC" = 1
python3 - "$T/facts.json" "$T/.out" >"$T/list_check" 2>&1 <<'PY' && pass "--list: a row per trajectory with exit status, steps, resolved" || fail "--list: a row per trajectory with exit status, steps, resolved" "$(cat "$T/list_check")"
import json, re, sys
facts = json.load(open(sys.argv[1]))
out = open(sys.argv[2]).read().splitlines()
rows = {l.split()[0]: l.split() for l in out[1:] if l.strip()}
for tid, f in facts["trajs"].items():
    r = rows.get(tid)
    assert r, f"no row for {tid}: {out}"
    assert r[1] == f["exit"] and r[2] == str(f["steps"]) and r[-1] == f["resolved"], (tid, r, f)
for name in facts["broken"]:
    assert rows.get(name) and rows[name][1] == "error:", (name, rows.get(name))
PY
n_err=$(grep -c '^mini inspect: ' "$T/.err" || true)
check "each broken file: one line on stderr (4 files, 4 lines)" test "$n_err" = 4
for f in "truncated.traj.json: line [0-9]+, column [0-9]+: the file ends inside a value" \
         "garbage.traj.json: line 2, column [0-9]+: invalid JSON" \
         "empty.traj.json: line 1, column 1: the file is empty" \
         "notatraj.traj.json: not a trajectory"; do
    if grep -Eq "^mini inspect: $F/broken/$f" "$T/.err"; then pass "error names the file and the place: ${f%%:*}"
    else fail "error names the file and the place: ${f%%:*}" "$ERR"; fi
done
expect_out "cost as dollars" '$12.50' "$MINI" inspect --list "$F/beta-2"

run "$MINI" inspect "$F"
TEXT=$OUT
cp "$T/.out" "$T/text.out"
check "the whole folder as text: exit 1 (broken files), the rest shown" test "$RC" = 1
for s in "======== [1/11] alpha-1" "Step 3/3" "$ python3 -m pytest SEARCH-TARGET-CMD" "NEEDLE-IN-OUTPUT" \
         "line 299 LONG-OUTPUT" "SYSTEM-PROMPT-MARK" "USER (returncode 1)" "EXIT (Submitted)" \
         "~ REASONING-MARK" "$ ls -la TOOLCALL-MARK" "TOOL (returncode 0)" "$ cat ANTHROPIC-MARK" "JSON-OBS-MARK" \
         "$ ls RESPONSES-MARK" "PATCH-MARK" "Task: Fix PARTS-TASK" "Task: Fix the FIRST-TASK bug." \
         "error: line 27" "Resolved: yes"; do
    if contains "$TEXT" "$s"; then pass "text shows: $s"; else fail "text shows: $s"; fi
done
# What a terminal would obey must not be in the output: ESC, BEL, C1
# controls (UTF-8 C2 80..C2 9F), NUL; and the output is valid UTF-8.
if python3 -c '
import re, sys
b = open(sys.argv[1], "rb").read()
t = b.decode("utf-8")
bad = [c for c in t if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f or c in "\u202e\u2066"]
sys.exit(1 if bad else 0)' "$T/text.out"; then pass "text: valid UTF-8, no control character, no bidi override"
else fail "text: valid UTF-8, no control character, no bidi override"; fi
for s in '^[]0;pwned-title^G' '^[[2J' '\u009b31m' '\u202eevil' 'nul␀byte' 'surrogate�' 'INVALID-UTF8-���-HERE'; do
    if contains "$TEXT" "$s"; then pass "text: shown visibly: $s"; else fail "text: shown visibly: $s"; fi
done
run "$MINI" inspect --no-prompts "$F/alpha-1/alpha-1.traj.json"
if [[ $RC == 0 ]] && ! contains "$OUT" "SYSTEM-PROMPT-MARK" && contains "$OUT" "Step 1/3"; then
    pass "--no-prompts: the prompts left out, the steps there"
else fail "--no-prompts: the prompts left out, the steps there"; fi

# mini's own trajectory (the demo's recorded run) and one it writes now.
expect_out "mini's demo trajectory: 5 steps, Submitted" "Exit status: Submitted   Steps: 5" \
    "$MINI" inspect "$MINI_SOURCE_DIR/demo/calc.traj.json"
mkdir -p "$T/cfg"
run env MSWEA_GLOBAL_CONFIG_DIR="$T/cfg" "$MINI" -c mini_textbased -c model.model_class=deterministic \
    -c 'model.outputs=["Look.\n```mswea_bash_command\necho FRESH-RUN-MARK\n```", "Done.\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"]' \
    --sandbox off --workspace "$T" -y --exit-immediately -o "$T/fresh.traj.json" -t "a fresh task"
expect_out "a trajectory mini just wrote: its steps and output" "FRESH-RUN-MARK" "$MINI" inspect "$T/fresh.traj.json"
contains "$OUT" "Steps: 2" && pass "a trajectory mini just wrote: 2 steps" || fail "a trajectory mini just wrote: 2 steps"

# Usage and bad paths.
expect_rc "a missing path: exit 1" 1 "$MINI" inspect "$T/nothing-here"
contains "$ERR" "nothing-here: No such file" && pass "a missing path: said so" || fail "a missing path: said so"
mkdir -p "$T/emptydir"
expect_rc "a folder without trajectories: exit 1" 1 "$MINI" inspect "$T/emptydir"
contains "$ERR" "no trajectory" && pass "a folder without trajectories: said so" || fail "a folder without trajectories: said so"
expect_rc "an unknown option: exit 2" 2 "$MINI" inspect --bogus "$F"
expect_rc "--html with --text: exit 2" 2 "$MINI" inspect --html "$T/x.html" --text "$F"
expect_rc "one broken file given: exit 1" 1 "$MINI" inspect "$F/broken/garbage.traj.json"
expect_rc "--help: exit 0" 0 "$MINI" inspect --help

# ---- HTML ----------------------------------------------------------------

R=$T/report.html
run "$MINI" inspect --html "$R" "$F"
check "--html: exit 1 (broken files), the report written" test "$RC" = 1 -a -s "$R"
check "--html: no temporary file left" test ! -e "$R.tmp"
if grep -Eq '(src|href)=["'"'"']?(https?:)?//' "$R"; then fail "--html: self-contained (no external URL)"
else pass "--html: self-contained (no external URL)"; fi
if grep -q '<script' "$R"; then fail "--html: no <script> in the file"; else pass "--html: no <script> in the file"; fi
if python3 -c 'import sys; t = open(sys.argv[1], "rb").read().decode("utf-8"); sys.exit(1 if any(ord(c) < 32 and c not in "\n\t" for c in t) else 0)' "$R"
then pass "--html: valid UTF-8 without control characters"; else fail "--html: valid UTF-8 without control characters"; fi
expect_rc "--html into a missing folder: exit 1" 1 "$MINI" inspect --html "$T/no/such/dir/r.html" "$F/alpha-1"

CHROMIUM=
for c in chromium chromium-browser; do have "$c" && { CHROMIUM=$c; break; }; done
if [[ -z $CHROMIUM ]]; then
    skip "the report in headless Chromium" "chromium is not installed (apt-get install chromium)"
else
    chrome() {
        timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$T/chromium" \
            --window-size=1200,900 "$@" 2>>"$T/chromium.log"
    }
    chrome --dump-dom "file://$R" >"$T/dom.html"
    title="mini inspect: 11 trajectories"
    if python3 "$HERE/inspect_html_check.py" dom "$T/dom.html" "$T/facts.json" "$title" >"$T/dom_check"; then
        pass "Chromium DOM: title kept, no element from the trajectory, steps, hostile text ($(grep -c '^ok' "$T/dom_check") checks)"
    else fail "Chromium DOM checks" "$(grep -v '^ok' "$T/dom_check")"; fi
    # The escaping alone keeps the page safe: without its Content-Security-Policy too.
    sed '/Content-Security-Policy/d' "$R" >"$T/nocsp.html"
    chrome --dump-dom "file://$T/nocsp.html" >"$T/dom_nocsp.html"
    if python3 "$HERE/inspect_html_check.py" dom "$T/dom_nocsp.html" "$T/facts.json" "$title" >"$T/dom_check2"; then
        pass "Chromium DOM without the CSP: still no script ran"
    else fail "Chromium DOM without the CSP: still no script ran" "$(grep -v '^ok' "$T/dom_check2")"; fi
    # The control: the same page with the <img onerror> left unescaped
    # must fail (the checks do see a script that ran).
    sed -e '/Content-Security-Policy/d' \
        -e "s/&lt;img src=x onerror=&quot;document.title=&#39;pwned-img&#39;&quot;&gt;/<img src=x onerror=\"document.title='pwned-img'\">/" \
        "$R" >"$T/unsafe.html"
    chrome --dump-dom "file://$T/unsafe.html" >"$T/dom_unsafe.html"
    python3 "$HERE/inspect_html_check.py" dom "$T/dom_unsafe.html" "$T/facts.json" "$title" >"$T/dom_check3" || true
    if grep -q "^FAIL - the title is the report's own" "$T/dom_check3" && grep -q "^FAIL - no <img>" "$T/dom_check3"; then
        pass "control: an unescaped <img onerror> is caught (title changed, element found)"
    else fail "control: an unescaped <img onerror> is caught (title changed, element found)" "$(cat "$T/dom_check3")"; fi
    printf '<!DOCTYPE html><html><body></body></html>\n' >"$T/blank.html"
    chrome --screenshot="$T/shot.png" "file://$R" >/dev/null
    chrome --screenshot="$T/blank.png" "file://$T/blank.html" >/dev/null
    if [[ -s $T/shot.png && -s $T/blank.png ]] &&
        python3 "$HERE/inspect_html_check.py" png "$T/shot.png" "$T/blank.png" >"$T/png_check"; then
        pass "Chromium screenshot: not empty ($(grep '^#' "$T/png_check"))"
    else fail "Chromium screenshot: not empty" "$(cat "$T/png_check" 2>/dev/null)" "$(tail -5 "$T/chromium.log")"; fi
fi

finish

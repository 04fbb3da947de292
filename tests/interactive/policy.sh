#!/usr/bin/env bash
# The policy in confirm mode, in a terminal: a rule's `ask` is the
# person's question with the rule and its reason shown; a denied command
# is blocked without a question and the model is told; a command no rule
# decides is asked about as always; the audit log says who decided.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/tmux.sh"
ui_init "$@"

tag=$RUN_TAG
AUDIT=$T/audit.jsonl
mock_start "$(turns "$(turn "Install." "echo install-$tag")" "$(turn "Delete." "rm -rf /nothing-$tag")" \
                    "$(turn "Free." "echo free-$tag")" "$(submit_turn)")"
mini_start --exit-immediately --audit-log "$AUDIT" -t "supervised" \
    -c 'policy={"rules": [{"match": "^echo install", "verdict": "ask", "reason": "installs need a look"}, {"match": "^rm -rf", "verdict": "deny", "reason": "no deleting"}]}'
screen_wait "Run this command?"
check "the question names the rule and its reason" screen_has "(policy.rules[0] asks you: installs need a look)"
keys Enter
screen_wait "Run this command?" 30 2
check "the denied command was blocked without a question" screen_has "(blocked by policy.rules[1]: no deleting)"
check "the model was told it was blocked" screen_has "Action blocked: no deleting"
check "a command no rule decides is asked about" screen_has "free-$tag"
type_line "not now"
screen_wait "Run this command?" 30 3
keys Enter
mini_wait_exit
check_rc "the run ends: status 0" 0
RC=0 OUT=$(python3 - "$AUDIT" "$tag" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
tag = sys.argv[2]
got = [(r["command"].split(";")[0], r["decision"], r["by"], r["reason"]) for r in recs]
want = [(f"echo install-{tag}", "allow", "person", "installs need a look"),
        (f"rm -rf /nothing-{tag}", "deny", "policy", "no deleting"),
        (f"echo free-{tag}", "deny", "person", "not now"),
        ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "allow", "person", "approved by the person at the terminal")]
print("ok" if got == want else f"got {got}")
PY
) ERR=
if [[ $OUT == ok ]]; then pass "the audit log says who decided each command"
else fail "the audit log says who decided each command" "$OUT"; fi
ui_finish

#!/bin/bash
# An approver's answer that is nearly an allow must be a deny, end to end:
# "allow\u0000x", "allow" with a raw NUL in it, an allow followed by text,
# an allow followed by a deny, "decision" given twice.  Each command would
# leave a marker file in the workspace; none may be there, and the audit
# log must have each deny with the reason.  An allow with blank lines after
# it still runs.  Through mini (the agent's policy) and through
# `mini-sandbox run --policy` (the same parser, agent/policy/policy.c).
#
# The approver is tests/integration/approver.sh (its ask-MODE words).
# Runs as the invoking user and rootless (mini_e2e_test).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
. "$MINI_SOURCE_DIR/tests/integration/agent_lib.sh"
agent_init

APPROVER=$MINI_SOURCE_DIR/tests/integration/approver.sh
SUBMIT='echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT'
HOSTILE=(nulesc nulraw trailing two dup)
# the reason each hostile answer's deny must give
declare -A WANT=(
    [nulesc]='NUL character (\u0000) in a string'
    [nulraw]='a NUL byte'
    [trailing]='more after the object: trailing garbage'
    [two]='more after the object: {"decision": "deny"}'
    [dup]='"decision" more than once'
)

# ==== 1. mini ==============================================================
WS=$T/ws.mini
mkws "$WS"
TRAJ=$T/traj.json
AUDIT=$T/audit.mini.jsonl
cat >"$T/policy.yaml" <<YAML
policy:
  rules:
    - {match: 'ask-', verdict: ask, reason: "the test asks"}
  approver: $APPROVER
  approver_timeout: 10
  audit_log: $AUDIT
YAML
outs=()
for m in "${HOSTILE[@]}" spaced; do outs+=("$(block "touch ask-$m.marker")"); done
outs+=("$(block "$SUBMIT")")
mrun -y --exit-immediately -c mini_textbased --model-class deterministic -l 0 -o "$TRAJ" -t task \
    --sandbox off --workspace "$WS" -c "$T/policy.yaml" -c "model.outputs=$(json_strs "${outs[@]}")"
check "mini goes on to its submission past every deny (exit 0)" test "$RC" -eq 0
for m in "${HOSTILE[@]}"; do
    check "mini: the answer $m is a deny: no marker" test ! -e "$WS/ask-$m.marker"
done
check "mini: an allow with blank lines after it runs" test -e "$WS/ask-spaced.marker"
jcheck "mini: the audit log has each deny, by the approver, with what was wrong" AUDIT="$AUDIT" \
    MODES="${HOSTILE[*]}" WANTS="$(for m in "${HOSTILE[@]}"; do printf '%s\n' "${WANT[$m]}"; done)" \
    < <(printf 'from policy_check import *\nimport os\n'; cat <<'PY'
modes = os.environ["MODES"].split()
wants = os.environ["WANTS"].splitlines()
audit = check_audit(TRAJ, os.environ["AUDIT"],
                    [(f"touch ask-{m}.marker", "deny", "approver") for m in modes]
                    + [("touch ask-spaced.marker", "allow", "test-approver")])
for rec, w in zip(audit, wants):
    assert w in rec["reason"], (w, rec)
assert audit[len(modes)]["reason"] == "fine, with blank lines after", audit[len(modes)]
PY
)

# ==== 2. mini-sandbox run --policy =========================================
WS=$T/ws.sbx
mkws "$WS"
AUDIT=$T/audit.sbx.jsonl
start_daemon
cat >"$T/policy.json" <<JSON
{"policy": {"default": "deny",
            "rules": [{"match": "ask-", "verdict": "ask"}],
            "approver": "$APPROVER",
            "approver_timeout": 10,
            "audit_log": "$AUDIT"}}
JSON
for m in "${HOSTILE[@]}"; do
    run sbx --policy "$T/policy.json" -- "touch $WS/ask-$m.marker"
    if [[ $RC == 126 && $ERR == *"${WANT[$m]}"* && ! -e $WS/ask-$m.marker ]]; then
        pass "mini-sandbox run --policy: the answer $m is a deny (126), nothing run"
    else
        fail "mini-sandbox run --policy: the answer $m is a deny (126), nothing run" "rc $RC, ${ERR:0:300}"
    fi
done
run sbx --policy "$T/policy.json" -- "touch $WS/ask-spaced.marker"
check "mini-sandbox run --policy: an allow with blank lines after it runs" test "$RC" -eq 0 -a -e "$WS/ask-spaced.marker"
jcheck "mini-sandbox run --policy: the audit log has each deny with its reason" AUDIT="$AUDIT" \
    WANTS="$(for m in "${HOSTILE[@]}"; do printf '%s\n' "${WANT[$m]}"; done)" \
    < <(printf 'from policy_check import *\nimport os\n'; cat <<'PY'
wants = os.environ["WANTS"].splitlines()
audit = load_audit(os.environ["AUDIT"])
assert [r["decision"] for r in audit] == ["deny"] * len(wants) + ["allow"], audit
for rec, w in zip(audit, wants):
    assert w in rec["reason"] and rec["by"] == "approver", (w, rec)
PY
)

finish

#!/bin/bash
# Supervision end to end: mini's policy with the deterministic model,
# and `mini-sandbox run --policy`.
#
#  1. allow and deny: a denied command does not run, the model is told
#     (policy.blocked_template), the run goes on; audit lines replayed
#     against the trajectory (policy_check.py); --audit-log wins.
#  2. ask answered by an approver (tests/integration/approver.sh): allow,
#     deny, crash, killed, hang past policy.approver_timeout, garbage; and
#     ask with nobody to ask (yolo, no approver) is a deny saying so.
#  3. a rule's profile override under --sandbox strict: that command runs
#     in a session of its profile, the audit line says which.
#  4. bad policies: exit 2 naming the key.
#  5. mini batch: 8 tasks, 4 workers, one audit log.
#  6. mini-sandbox run --policy: deny exits 126 with one line and runs
#     nothing, allow runs, ask goes to the approver, audit lines (the
#     policy's, and the daemon's own --audit-log).
#  7. concurrent writers: 8 mini runs at once, 26 lines of ~3 KB each, into
#     one audit log: none torn, none lost, each run's in order.
#
# Runs as the invoking user and rootless (mini_e2e_test).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
. "$MINI_SOURCE_DIR/tests/integration/agent_lib.sh"
agent_init

APPROVER=$MINI_SOURCE_DIR/tests/integration/approver.sh
SUBMIT='echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT'
SCEN=0
scenario() {
    SCEN=$((SCEN + 1))
    WS=$T/ws.$SCEN
    mkws "$WS"
    TRAJ=$T/traj.$SCEN.json
    AUDIT=$T/audit.$SCEN.jsonl
    log "# -- $*"
}
# outputs CMD...: model.outputs, one text-mode reply per command, then the submission.
outputs() {
    local a=() c
    for c in "$@" "$SUBMIT"; do a+=("$(block "$c")"); done
    json_strs "${a[@]}"
}
# pcheck NAME [VAR=VALUE...] <<'PY': Python checks with policy_check loaded.
pcheck() {
    local name=$1
    shift
    jcheck "$name" AUDIT="$AUDIT" "$@" < <(printf 'from policy_check import *\nimport os, json\nAUDIT = os.environ["AUDIT"]\n'; cat)
}
# minirun ARGS...: mini, text mode, deterministic, no cost limit, no questions.
minirun() {
    mrun -y --exit-immediately -c mini_textbased --model-class deterministic -l 0 -o "$TRAJ" -t task "$@"
}

# ==== 1. allow and deny ===================================================
scenario "allow and deny, audit log replayed against the trajectory"
cat >"$T/p1.yaml" <<YAML
policy:
  default: allow
  rules:
    - {match: '^\\s*rm\\s+-rf\\s+/', verdict: deny, reason: "never delete from /"}
    - {match: 'touch .*denied', verdict: deny}
  audit_log: $T/not-this-one.jsonl
YAML
minirun --sandbox off --workspace "$WS" -c "$T/p1.yaml" --audit-log "$AUDIT" \
    -c "model.outputs=$(outputs "echo hello > allowed.txt" "rm -rf /nonexistent-$RUN_TAG" \
        "touch $WS/denied.txt" "false")"
expect_rc_last() { if [[ $RC == "$2" ]]; then pass "$1"; else fail "$1" "expected exit status $2, got $RC"; fi; }
expect_rc_last "a run with blocked actions goes on to its submission (exit 0)" 0
check "an allowed command ran" test -f "$WS/allowed.txt"
check "a denied command did not run" test ! -e "$WS/denied.txt"
check "--audit-log wins over policy.audit_log" test ! -e "$T/not-this-one.jsonl"
pcheck "audit lines match the trajectory: command, step, decision, reason, returncode" RUN_TAG="$RUN_TAG" <<'PY'
audit = check_audit(TRAJ, AUDIT, [("echo hello > allowed.txt", "allow", "policy"),
                                  (f"rm -rf /nonexistent-{os.environ['RUN_TAG']}", "deny", "policy"),
                                  (f"touch {WS}/denied.txt", "deny", "policy"),
                                  ("false", "allow", "policy")])
assert audit[1]["reason"] == "never delete from /" and audit[1]["rule"] == "policy.rules[0]", audit[1]
assert audit[2]["reason"] == "denied by policy.rules[1]", audit[2]
assert audit[0]["rule"] == "policy.default" and audit[0]["environment"] == "local", audit[0]
assert audit[3]["returncode"] == 1 and audit[0]["output_bytes"] == 0, audit
assert audit[4]["command"].startswith("echo COMPLETE_TASK") and audit[4]["returncode"] == 0, audit[4]
t = load_traj()
assert t["info"]["exit_status"] == "Submitted", t["info"]["exit_status"]
obs = [m["content"] for m in t["messages"] if m["role"] == "user"][1:]
assert "Action blocked: never delete from /" in obs[1], obs[1]
PY

scenario "policy.blocked_template, and the log is appended to, never truncated"
cp "$T/audit.1.jsonl" "$AUDIT"
before=$(wc -l <"$AUDIT")
minirun --sandbox off --workspace "$WS" \
    -c 'policy={"rules": [{"match": "^rm", "verdict": "deny", "reason": "no rm"}], "blocked_template": "NOPE({{rule}}): {{reason}} [{{command}}]"}' \
    -c "policy.audit_log=$AUDIT" -c "model.outputs=$(outputs "rm x")"
jcheck "the blocked observation comes from policy.blocked_template" <<'PY'
t = load_traj()
obs = [m["content"] for m in t["messages"] if m["role"] == "user"][1:]
assert "NOPE(policy.rules[0]): no rm [rm x]" in obs[0], obs
PY
after=$(wc -l <"$AUDIT")
check "the audit log grew by the run's lines ($before -> $after)" test "$after" -eq $((before + 2))

# ==== 2. ask ==============================================================
scenario "ask answered by an approver: allow, deny, crash, killed, hang, garbage"
HANG=$(printf '60.%04d' $((RANDOM % 10000))) # the hanging approver's sleeps, this run's own
cat >"$T/p2.yaml" <<YAML
policy:
  rules:
    - {match: 'ask-', verdict: ask, reason: "the test asks"}
  approver: $APPROVER $T/requests.jsonl $HANG
  approver_timeout: 1
  audit_log: $AUDIT
YAML
start=$(now_ms)
minirun --sandbox off --workspace "$WS" -c "$T/p2.yaml" \
    -c "model.outputs=$(outputs "echo ask-allow > a.txt" "echo ask-deny > b.txt" "echo ask-crash > c.txt" \
        "echo ask-kill > d.txt" "echo ask-hang > e.txt" "echo ask-garbage > f.txt")"
expect_rc_last "the run goes on past every approver failure (exit 0)" 0
check "only the approved command ran" test -f "$WS/a.txt" -a ! -e "$WS/b.txt" -a ! -e "$WS/c.txt" \
    -a ! -e "$WS/d.txt" -a ! -e "$WS/e.txt" -a ! -e "$WS/f.txt"
check "the hanging approver was stopped at its timeout (run took ${ELAPSED_MS} ms)" test "$ELAPSED_MS" -lt 15000
check "nothing of the hanging approver is left" cmd_gone "sleep $HANG"
pcheck "each approver outcome is in the audit log, as a deny with its reason" T="$T" <<'PY'
audit = check_audit(TRAJ, AUDIT, [("echo ask-allow > a.txt", "allow", "test-approver"),
                                  ("echo ask-deny > b.txt", "deny", "test-approver"),
                                  ("echo ask-crash > c.txt", "deny", "approver"),
                                  ("echo ask-kill > d.txt", "deny", "approver"),
                                  ("echo ask-hang > e.txt", "deny", "approver"),
                                  ("echo ask-garbage > f.txt", "deny", "approver")])
want = ["looks fine to the test", "the test says no", "exit status 3", "killed by signal 9",
        "did not answer within 1 seconds", "not a JSON object"]
for rec, w in zip(audit, want):
    assert w in rec["reason"], (w, rec)
reqs = [json.loads(l) for l in open(os.path.join(os.environ["T"], "requests.jsonl"))]
assert len(reqs) == 6, len(reqs)
r = reqs[0]
assert r["command"] == "echo ask-allow > a.txt" and r["step"] == 1 and r["task"] == "task", r
assert r["rule"] == "policy.rules[0]" and r["reason"] == "the test asks" and r["cwd"], r
assert r["messages"] and r["messages"][-1]["role"] == "assistant", r["messages"]
PY

scenario "ask with nobody to ask (yolo, no approver) is a deny that says so"
minirun --sandbox off --workspace "$WS" -c 'policy.default=ask' -c "policy.audit_log=$AUDIT" \
    -c "model.outputs=$(outputs "touch asked.txt")"
check "the command did not run" test ! -e "$WS/asked.txt"
pcheck "the reason says nobody was there to ask" <<'PY'
audit = load_audit(AUDIT)
assert audit[0]["decision"] == "deny" and "nobody was there to ask" in audit[0]["reason"], audit[0]
assert audit[0]["rule"] == "policy.default", audit[0]
PY

# ==== 3. a rule's profile ================================================
scenario "a rule's profile override under --sandbox strict"
minirun --sandbox strict --workspace "$WS" \
    -c 'policy={"rules": [{"match": "^echo other", "verdict": "allow", "profile": "permissive"}]}' \
    -c "policy.audit_log=$AUDIT" -c "model.outputs=$(outputs "echo strict" "echo other")"
if [[ $RC == 0 ]]; then
    pcheck "the override ran in a session of its profile, the rest in the run's" <<'PY'
audit = check_audit(TRAJ, AUDIT, [("echo strict", "allow", "policy"), ("echo other", "allow", "policy")])
assert audit[0]["environment"] == "sandbox" and audit[0]["profile"] == "strict", audit[0]
assert audit[1]["profile"] == "permissive", audit[1]
assert audit[0]["isolation"] in ("full", "degraded"), audit[0]
PY
elif [[ $ERR == *isolation_unavailable* ]]; then
    skip "profile override" "the sandbox cannot isolate here: $ERR"
else
    fail "a run under --sandbox strict with a profile override" "exit $RC"
fi

scenario "a rule's profile that cannot be had: the model is told, the run goes on"
minirun --sandbox off --workspace "$WS" \
    -c "policy={\"rules\": [{\"match\": \"^touch\", \"verdict\": \"allow\", \"profile\": \"$T/no-such-profile.json\"}]}" \
    -c "policy.audit_log=$AUDIT" -c "model.outputs=$(outputs "touch never.txt")"
expect_rc_last "the run still submits (exit 0)" 0
check "the command did not run anywhere" test ! -e "$WS/never.txt"
jcheck "the observation says the profile could not be had" <<'PY'
t = load_traj()
obs = [m["content"] for m in t["messages"] if m["role"] == "user"][1:]
assert "no-such-profile.json" in obs[0] and "<returncode>-1</returncode>" in obs[0], obs[0]
PY

# ==== 4. bad policies =====================================================
scenario "bad policies name the key"
echo '{"instance_id": "t0", "problem_statement": "p"}' >"$T/none.jsonl"
mrun -y -t task --sandbox off -c mini --model-class deterministic -c 'model.outputs=[]' \
    -c 'policy={"rules": [{"match": "x", "verdict": "maybe"}]}'
if [[ $RC == 2 && $ERR == *'policy.rules[0].verdict: "maybe" is not allow, deny or ask'* ]]; then
    pass "an unknown verdict: exit 2, the key named"
else fail "an unknown verdict: exit 2, the key named"; fi
mrun -y -t task --sandbox off -c mini --model-class deterministic -c 'model.outputs=[]' \
    -c 'policy={"rules": [{"match": "(", "verdict": "deny"}]}'
if [[ $RC == 2 && $ERR == *'policy.rules[0].match: not a valid regular expression'* ]]; then
    pass "a bad regular expression: exit 2, the key named"
else fail "a bad regular expression: exit 2, the key named"; fi
run bounded env -i -C "$T" "${MINI_BASE_ENV[@]}" "$MINI_BIN/mini" batch "$T/none.jsonl" -o "$T/bbad" \
    -c mini --model-class deterministic -c 'model.outputs=["x"]' -c 'policy.rules=[{"match": "[", "verdict": "deny"}]'
if [[ $RC == 2 && $ERR == *'policy.rules[0].match: not a valid regular expression'* && ! -e $T/bbad/t0 ]]; then
    pass "mini batch refuses a bad policy up front: exit 2, the key named"
else fail "mini batch refuses a bad policy up front: exit 2, the key named" "status $RC: $ERR"; fi
mrun -y -t task --sandbox off -c mini --model-class deterministic -c 'model.outputs=[]' -c 'policy.approver_timout=3'
if [[ $RC == 2 && $ERR == *'policy.approver_timout'*'did you mean policy.approver_timeout'* ]]; then
    pass "a misspelt policy key: exit 2, the right one suggested"
else fail "a misspelt policy key: exit 2, the right one suggested"; fi

# ==== 5. mini batch ========================================================
scenario "mini batch: 8 tasks, 4 workers, one audit log"
python3 -c "
import json
for i in range(8): print(json.dumps({'instance_id': f't{i}', 'problem_statement': f'n{i}'}))" >"$T/tasks.jsonl"
cat >"$T/bcfg.yaml" <<YAML
model:
  model_class: deterministic
  cost_per_call: 0
  outputs: $(outputs "echo one" "rm -rf /nonexistent-$RUN_TAG")
policy:
  rules: [{match: '^rm', verdict: deny, reason: "no rm in batch"}]
  audit_log: $AUDIT
YAML
run bounded env -i -C "$T" "${MINI_BASE_ENV[@]}" "$MINI_BIN/mini" batch "$T/tasks.jsonl" -o "$T/bout" -w 4 \
    -c mini -c "$T/bcfg.yaml" --sandbox off
expect_rc_last "the batch ends: exit 0" 0
pcheck "every worker's actions are in the one audit log, whole lines, per task" <<'PY'
audit = load_audit(AUDIT)
assert len(audit) == 8 * 3, len(audit)
by_task = {}
for r in audit:
    by_task.setdefault(r["instance_id"], []).append(r)
assert sorted(by_task) == [f"t{i}" for i in range(8)], sorted(by_task)
for t, rs in by_task.items():
    assert [r["decision"] for r in rs] == ["allow", "deny", "allow"], (t, rs)
    assert rs[1]["reason"] == "no rm in batch", rs[1]
    assert len({r["run"] for r in rs}) == 1, rs
PY

# ==== 6. mini-sandbox run --policy =========================================
scenario "mini-sandbox run --policy"
start_daemon --audit-log "$T/daemon-audit.jsonl"
cat >"$T/p5.json" <<JSON
{"policy": {"default": "deny",
            "rules": [{"match": "^echo ", "verdict": "allow"},
                      {"match": "ask-", "verdict": "ask"}],
            "approver": "$APPROVER",
            "approver_timeout": 2,
            "audit_log": "$AUDIT"}}
JSON
run sbx --policy "$T/p5.json" -- "touch $WS/cli-denied"
if [[ $RC == 126 && $(printf '%s\n' "$ERR" | wc -l) == 1 && $ERR == *"blocked by policy (policy.default)"* ]] &&
    [[ ! -e $WS/cli-denied ]]; then
    pass "deny: exit 126, one line on stderr, nothing run"
else fail "deny: exit 126, one line on stderr, nothing run"; fi
run sbx --policy "$T/p5.json" -- echo allowed-"$RUN_TAG"
if [[ $RC == 0 && $OUT == "allowed-$RUN_TAG" ]]; then pass "allow: the command runs in the sandbox"
else fail "allow: the command runs in the sandbox"; fi
run sbx --policy "$T/p5.json" -- "touch $WS/ask-allow"
if [[ $RC == 0 && -e $WS/ask-allow ]]; then pass "ask: the approver allows, the command runs"
else fail "ask: the approver allows, the command runs"; fi
run sbx --policy "$T/p5.json" -- "touch $WS/ask-garbage"
if [[ $RC == 126 && $ERR == *"not a JSON object"* && ! -e $WS/ask-garbage ]]; then
    pass "ask: the approver's garbage is a deny (126)"
else fail "ask: the approver's garbage is a deny (126)"; fi
pcheck "mini-sandbox writes one audit line per command" <<'PY'
audit = load_audit(AUDIT)
assert [r["decision"] for r in audit] == ["deny", "allow", "allow", "deny"], audit
assert audit[1]["returncode"] == 0 and audit[1]["environment"] == "sandbox", audit[1]
assert audit[2]["by"] == "test-approver", audit[2]
PY
pcheck "the daemon's own audit log has the commands that ran, and none that were denied" T="$T" <<'PY'
lines = open(os.path.join(os.environ["T"], "daemon-audit.jsonl")).read().splitlines()
recs = [json.loads(l) for l in lines]
cmds = [" ".join(r["argv"]) for r in recs]
assert len(recs) == 2 and any("ask-allow" in c for c in cmds), cmds
assert not any("cli-denied" in c or "ask-garbage" in c for c in cmds), cmds
PY
python3 - "$T/long.json" <<'PY'
import json, sys
json.dump({"policy": {"default": "allow", "rules": [
    {"match": "^touch ", "verdict": "deny", "reason": "x" * 300000 + "\u0001 end-of-reason"}]}}, open(sys.argv[1], "w"))
PY
run sbx --policy "$T/long.json" -- "touch $WS/long-denied"
if [[ $RC == 126 && $ERR == *"end-of-reason"* && ! -e $WS/long-denied ]]; then
    pass "a deny whose reason is 300 KB: 126, the whole reason said, nothing run"
else fail "a deny whose reason is 300 KB: 126, the whole reason said, nothing run" "rc $RC, ${ERR:0:200}"; fi
echo '{"rules": "no"}' >"$T/bad.json"
run sbx --policy "$T/bad.json" -- true
if [[ $RC == 125 && $ERR == *"policy.rules: must be a list"* ]]; then pass "a bad policy file: 125, the key named"
else fail "a bad policy file: 125, the key named"; fi

# ==== 7. concurrent writers ================================================
scenario "8 mini runs at once append 26 long lines each to one audit log"
pad=$(head -c 3000 /dev/zero | tr '\0' x)
cmds=()
for i in $(seq 1 25); do cmds+=("echo $i-$pad >/dev/null"); done
printf 'model:\n  outputs: %s\n' "$(outputs "${cmds[@]}")" >"$T/conc.yaml"
pids=()
for w in 1 2 3 4 5 6 7 8; do
    timeout -k 5 120 env -i "${MINI_BASE_ENV[@]}" "$MINI_BIN/mini" -y --exit-immediately -c mini_textbased \
        -c "$T/conc.yaml" --model-class deterministic -l 0 -o "$T/conc.$w.json" -t task --sandbox off \
        --workspace "$WS" -c "policy.audit_log=$AUDIT" >"$T/conc.$w.out" 2>&1 </dev/null &
    pids+=("$!")
    BG_PIDS+=("$!")
done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
check "the 8 runs all submitted" test "$bad" -eq 0
pcheck "8 x 26 lines, none torn, none lost, each run's steps in order" <<'PY'
audit = load_audit(AUDIT)
assert len(audit) == 8 * 26, len(audit)
runs = {}
for r in audit:
    runs.setdefault(r["run"], []).append(r)
assert len(runs) == 8, len(runs)
for rs in runs.values():
    assert [r["step"] for r in rs] == list(range(1, 27)), [r["step"] for r in rs]
    assert all(r["command"].startswith(f"echo {i}-x") for i, r in zip(range(1, 26), rs)), rs[0]["command"][:40]
PY

finish

#!/bin/bash
# Drop-in fidelity of the agent loop with mini-swe-agent 2.4.6: `mini` runs
# the scenarios of tests/integration/fidelity/*.json (scripted replies of
# the deterministic model, --sandbox off) and its trajectories are
# compared with the ones mini-swe-agent wrote for the same replies
# (fidelity_check.py says how they were made and what is normalised):
#
#  - text:       template variables (n_model_calls, model_cost,
#                elapsed_seconds, cwd, processor, output_path, step_limit,
#                cost_limit, mode, HOME and any process environment
#                variable) in the instance and observation templates; two
#                commands, then the submitting one and one more in a single
#                reply: the first two observed, nothing for the others;
#                non-ASCII text (\u escapes, surrogate pairs).
#  - toolcall:   the same with four tool calls: the submitting one and the
#                one after it answered "action was not executed".
#  - steplimit, costlimit, walltime: LimitsExceeded / TimeExceeded exit
#                messages.
#  - exhausted:  the deterministic model runs out of replies: IndexError,
#                "list index out of range", a traceback, the failed query
#                counted.
#  - formaterr:  three format errors in a row: RepeatedFormatError.
#
# Each trajectory must also be byte for byte what Python's
# json.dump(indent=2) writes for its content.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
. "$MINI_SOURCE_DIR/tests/integration/agent_lib.sh"
agent_init

# expect_rc_last NAME WANT: the last mini run exited with WANT (mini's own
# exit status; mini-swe-agent's always exits 0, a deliberate difference:
# docs/config.md).
expect_rc_last() {
    if [[ $RC == "$2" ]]; then pass "$1"; else fail "$1" "expected exit status $2, got $RC: $ERR"; fi
}

# run_fixture NAME [MINI ARGS...]: mini on the scenario's config and task,
# in a fresh workspace; sets WS, TRAJ, RC.
run_fixture() {
    local name=$1
    shift
    WS=$T/ws.$name
    TRAJ=$T/$name.traj.json
    mkdir -p "$WS"
    log "# -- $name"
    env PYTHONPATH="$AGENT_TEST_DIR" WS="$WS" HOMEDIR="$T/home" python3 -c '
import json, os, sys
from fidelity_check import load_fixture, subst
f = load_fixture(sys.argv[1])
cfg = subst(f["config"], {"<WS>": os.environ["WS"], "<HOME>": os.environ["HOMEDIR"]})
with open(sys.argv[2], "w", encoding="utf-8") as out:
    json.dump(cfg, out, ensure_ascii=False)
with open(sys.argv[3], "w", encoding="utf-8") as out:
    out.write(f["task"])
' "$name" "$T/$name.cfg.yaml" "$T/$name.task"
    MENV=(FIDELITY_VAR=fv-1)
    MRUN_CWD=$WS mrun -y --model-class deterministic -c "$T/$name.cfg.yaml" --sandbox off \
        -t "$(cat "$T/$name.task")" -o "$TRAJ" "$@"
    MENV=()
}

# same_as_real NAME: the trajectory equals the fixture's after normalising,
# and its bytes are Python's.
same_as_real() {
    local name=$1
    jcheck "$name: trajectory bytes are json.dump(indent=2)'s (ensure_ascii, float repr)" <<'PY'
from fidelity_check import python_bytes_ok
with open(TRAJ, encoding="utf-8") as f:
    raw = f.read()
assert python_bytes_ok(raw), "mini's file differs from Python's json.dumps(indent=2) of the same content"
PY
    jcheck "$name: trajectory equals mini-swe-agent 2.4.6's (normalised)" NAME="$name" \
        HOMEDIR="$T/home" <<'PY'
import json, os
from fidelity_check import load_fixture, normalise, first_diff
f = load_fixture(os.environ["NAME"])
subs = {TRAJ: "<TRAJ>", WS: "<WS>", os.environ["HOMEDIR"]: "<HOME>"}
ours = normalise(load_traj(), subs)
a, b = json.dumps(f["expected"], indent=2), json.dumps(ours, indent=2)
assert a == b, first_diff(a, b)
PY
}

run_fixture text
expect_rc_last "text: exit 0 (Submitted)" 0
same_as_real text
jcheck "text: template variables rendered as mini-swe-agent renders them" <<'PY'
t = load_traj()
inst = t["messages"][1]["content"]
for part in ["|n=0|", "|c=0.0|", "|e=0|", f"|cwd=[{WS}]|", "|p=[]|", f"|o={TRAJ}|", "|v=fv-1|", "|s=0|",
             "|cl=3.0|", "|m=yolo"]:
    assert part in inst, f"{part!r} not in {inst!r}"
obs = [m["content"] for m in t["messages"] if m["role"] == "user"][1:]
expect_eq(obs, ["a\n|n=1|c=0.5|rc=0|x=", "\u00e9\t\U0001F600\n|n=1|c=0.5|rc=0|x="], "observations")
PY

run_fixture toolcall
expect_rc_last "toolcall: exit 0 (Submitted)" 0
same_as_real toolcall
jcheck "toolcall: two tool calls run, the submitting one and the next answered as not executed" <<'PY'
t = load_traj()
tools = [m for m in t["messages"] if m["role"] == "tool"]
expect_eq([m["tool_call_id"] for m in tools], ["call_1", "call_2", "call_3", "call_4"], "tool_call_ids")
expect_eq([m["extra"]["exception_info"] for m in tools[2:]], ["action was not executed"] * 2, "not executed")
expect_eq(t["messages"][-1]["role"], "exit", "last message")
PY

run_fixture steplimit
expect_rc_last "steplimit: exit 1" 1
same_as_real steplimit

run_fixture costlimit
expect_rc_last "costlimit: exit 1" 1
same_as_real costlimit

run_fixture walltime
expect_rc_last "walltime: exit 1" 1
same_as_real walltime

run_fixture exhausted
expect_rc_last "exhausted: exit 1" 1
same_as_real exhausted
jcheck "exhausted: the exit message has exception_str and a Python-shaped traceback" <<'PY'
ex = load_traj()["messages"][-1]["extra"]
expect_eq(list(ex), ["exit_status", "submission", "exception_str", "traceback"], "exit extra keys")
assert ex["traceback"].startswith("Traceback (most recent call last):\n"), ex["traceback"]
assert ex["traceback"].endswith("IndexError: list index out of range\n"), ex["traceback"]
PY

run_fixture formaterr -c agent.max_consecutive_format_errors=3
expect_rc_last "formaterr: exit 1" 1
jcheck "formaterr: RepeatedFormatError after 3 calls, as mini-swe-agent ends it" <<'PY'
import json
from fidelity_check import load_fixture
want = load_fixture("formaterr")["expected"]
t = load_traj()
expect_eq([m["role"] for m in t["messages"]], [m["role"] for m in want["messages"]], "roles")
expect_eq(t["messages"][-1], want["messages"][-1], "exit message")
expect_eq(t["info"]["model_stats"]["api_calls"], want["info"]["model_stats"]["api_calls"], "api_calls")
expect_eq([m["content"] for m in t["messages"][2:5]], ["bad"] * 3, "format-error messages")
PY

finish

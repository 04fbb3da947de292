#!/bin/bash
# End-to-end tests of `mini`, the agent: the whole program (command line,
# config, model over HTTP, agent loop, environment, trajectory) against the
# scripted mock of the OpenAI and Anthropic APIs (tests/mock_llm.py, on
# 127.0.0.1), under `--sandbox strict` (a private mini-sandboxd, and once a
# shared one) and under `--sandbox off`.
#
#  1. OpenAI tool calling, strict and off: two tool calls in one turn, then a
#     submission; trajectory shape, tool_call_ids both ways, the request's
#     auth header, the file written in the workspace, the API key's fate.
#  2. Anthropic tool use, strict: tool_use -> tool_result in the next request.
#  3. Text mode: format errors are not assistant messages, are counted, and
#     the consecutive-error counter resets after a good step.
#  4. step_limit, cost_limit (-l), wall_time_limit_seconds.
#  5. A 12001-character output: head, tail and "2001 characters elided", with
#     the built-in template and a mini-swe-agent-style one.
#  6. Command timeouts: the model is told, the partial output kept, the run
#     goes on.
#  7. Ctrl-C (during a command, during a model request) and kill -9 leave a
#     valid trajectory and nothing running.
#  8. --help, --version, bad usage, unknown config keys, missing API keys.
#  9. Retries through the whole program: 429 + Retry-After, 5xx, 401.
# 10. The replay model fixes the README demo (demo/calc).
#
# Runs as the invoking user, or (MINI_TEST_ROOTLESS=1 as root) as an
# unprivileged user; see tests/lib.sh.  Prints "N passed, N failed".
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
. "$MINI_SOURCE_DIR/tests/integration/agent_lib.sh"
agent_init

# A fresh workspace and trajectory path for each scenario.
SCEN=0
scenario() {
    SCEN=$((SCEN + 1))
    WS=$T/ws.$SCEN
    mkws "$WS"
    TRAJ=$T/traj.$SCEN.json
    log "# -- $*"
}

# expect_rc_last NAME WANT: the last mini run (mrun/mwait) exited with WANT.
expect_rc_last() {
    if [[ $RC == "$2" ]]; then pass "$1"; else fail "$1" "expected exit status $2, got $RC"; fi
}

# The mock's turns, written as JSON by Python (no shell quoting games).
turns() { python3 -c "import json, sys; print(json.dumps($1))"; }

SUBMIT='echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT'

# ==== 8. the command line =================================================
scenario "command line"
mrun --help
missing=()
for f in -t --task -m --model -c --config -y --yolo -l --cost-limit -o --output --exit-immediately \
         --model-class --environment-class --sandbox --workspace; do
    grep -qE -- "(^|[[:space:],])$f([[:space:],=]|$)" "$T/.out" || missing+=("$f")
done
if [[ $RC == 0 && ${#missing[@]} == 0 ]]; then
    pass "--help exits 0 and lists every flag of mini's documented command line"
else
    fail "--help exits 0 and lists every flag of mini's documented command line" "missing: ${missing[*]}"
fi
mrun --version
if [[ $RC == 0 && $OUT =~ ^mini\ [0-9]+\.[0-9]+ ]]; then pass "--version prints 'mini X.Y...' and exits 0"
else fail "--version prints 'mini X.Y...' and exits 0"; fi
mrun --no-such-flag
if [[ $RC == 2 && $ERR == *no-such-flag* ]]; then pass "an unknown flag: exit 2, named on stderr"
else fail "an unknown flag: exit 2, named on stderr"; fi
mrun -y -t task stray-argument
if [[ $RC == 2 && $ERR == *stray-argument* ]]; then pass "a stray argument: exit 2, named on stderr"
else fail "a stray argument: exit 2, named on stderr"; fi
mrun -y -t task -l lots
if [[ $RC == 2 && $ERR == *cost-limit* ]]; then pass "-l with a non-number: exit 2, naming --cost-limit"
else fail "-l with a non-number: exit 2, naming --cost-limit"; fi
mrun -y -t task --sandbox off -c mini -c agent.step_limt=3 --model-class deterministic \
    -c "model.outputs=$(json_strs "$(block "$SUBMIT")")"
if [[ $RC != 0 && $ERR == *agent.step_limt* && $ERR == *step_limit* ]]; then
    pass "an unknown config key: non-zero exit, the key named, the right one suggested"
else
    fail "an unknown config key: non-zero exit, the key named, the right one suggested"
fi
mrun -y -t task --sandbox off -c mini -c agent.step_limit=ten --model-class deterministic \
    -c "model.outputs=$(json_strs "$(block "$SUBMIT")")"
if [[ $RC != 0 && $ERR == *agent.step_limit* ]]; then pass "a config value of the wrong type: non-zero exit, key named"
else fail "a config value of the wrong type: non-zero exit, key named"; fi
mrun -y --sandbox off -c mini --model-class deterministic -c "model.outputs=$(json_strs "$(block "$SUBMIT")")"
if [[ $RC == 2 && $ERR == *task* ]]; then pass "no task and no terminal: exit 2 with a message"
else fail "no task and no terminal: exit 2 with a message"; fi

# No key and the provider's own endpoint: refused before any request (and
# were one made, it would only reach the closed local proxy port).
MENV=(MSWEA_COST_TRACKING=ignore_errors)
mrun -y --exit-immediately -m openai/gpt-test --sandbox off -t task -o "$TRAJ"
if [[ $RC != 0 && $ERR == *OPENAI_API_KEY* ]] && (( ELAPSED_MS < 5000 )); then
    pass "no OpenAI key: a quick non-zero exit naming OPENAI_API_KEY"
else
    fail "no OpenAI key: a quick non-zero exit naming OPENAI_API_KEY" "after ${ELAPSED_MS} ms"
fi
mrun -y --exit-immediately -m anthropic/claude-test --sandbox off -t task -o "$TRAJ"
if [[ $RC != 0 && $ERR == *ANTHROPIC_API_KEY* ]] && (( ELAPSED_MS < 5000 )); then
    pass "no Anthropic key: a quick non-zero exit naming ANTHROPIC_API_KEY"
else
    fail "no Anthropic key: a quick non-zero exit naming ANTHROPIC_API_KEY" "after ${ELAPSED_MS} ms"
fi
# No key with a custom base URL (a local server may need none): the request
# goes without one, and the server's 401 is explained.
mock_start "$(turns '[{"status": 401}] * 3')"
MENV=(OPENAI_BASE_URL="http://127.0.0.1:$MOCK_PORT/v1" MSWEA_COST_TRACKING=ignore_errors)
mrun -y --exit-immediately -m openai/gpt-test --sandbox off -t task -o "$TRAJ"
if [[ $RC != 0 && $ERR == *401* && $ERR == *"no API key"* && $(n_requests) == 1 ]]; then
    pass "no key, custom base URL, server says 401: non-zero exit, 'no API key was sent', one request"
else
    fail "no key, custom base URL, server says 401: non-zero exit, 'no API key was sent', one request" \
        "requests: $(n_requests)"
fi
jcheck "no key, custom base URL: no Authorization header was sent" <<'PY'
r = requests()
assert r and "authorization" not in r[0]["headers"], "headers: %r" % r[0]["headers"]
PY
mock_stop

# ==== 1. OpenAI tool calling, end to end ==================================
# openai_turns EXTRA: two tool calls (a file write; pwd, the key and the
# environment, then EXTRA), then the submission.
openai_turns() {
    ENVCMD="pwd; echo \"key=[\$OPENAI_API_KEY]\"; env$1" python3 -c '
import json, os
print(json.dumps([
 {"text": "I will write a file and look at my environment.",
  "tool_calls": [{"id": "call_write_1", "command": "printf \"written by the model\\n\" > model-file.txt && echo wrote-it"},
                 {"id": "call_env_2", "command": os.environ["ENVCMD"]}],
  "usage": {"input": 1000, "output": 100}},
 {"text": "Done, submitting.",
  "tool_calls": [{"id": "call_submit_3", "command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; echo the final answer"}],
  "usage": {"input": 2000, "output": 50}}]))'
}
CANARY=canary-$RUN_TAG

# The checks both modes share.
openai_common_checks() {
    local mode=$1
    expect_rc_last "openai/$mode: mini exits 0 after the submission" 0
    jcheck "openai/$mode: valid mini-swe-agent-1.1 trajectory, Submitted, submission text, message roles" <<'PY'
t = load_traj()
expect_status(t, "Submitted")
expect_eq(t["info"].get("submission"), "the final answer\n", "info.submission")
# The submitting tool call is answered too ("action was not executed"), as
# mini-swe-agent's InteractiveAgent answers it before the exit message.
expect_eq(roles(t), ["system", "user", "assistant", "tool", "tool", "assistant", "tool", "exit"], "roles")
expect_eq(calls(t), 2, "info.model_stats.api_calls")
PY
    jcheck "openai/$mode: tool messages answer the mock's tool_call_ids, in order" <<'PY'
t = load_traj()
a = of_role(t, "assistant")[0]
ids = [c["id"] for c in a.get("tool_calls", [])]
expect_eq(ids, ["call_write_1", "call_env_2"], "the assistant message's tool_calls ids")
expect_eq([x.get("tool_call_id") for x in a["extra"]["actions"]], ids, "extra.actions tool_call_ids")
tools = of_role(t, "tool")
expect_eq([m.get("tool_call_id") for m in tools], ids + ["call_submit_3"], "tool messages' tool_call_id")
expect_eq(tools[2]["extra"].get("exception_info"), "action was not executed", "the submitting call's answer")
assert tools[0]["content"].startswith("<returncode>0</returncode>") and "wrote-it" in tools[0]["content"], \
    "first observation: " + short(tools[0]["content"])
PY
    jcheck "openai/$mode: the second request carries the tool results under those ids, and no extra" <<'PY'
t = load_traj()
r = requests()
expect_eq(len(r), 2, "requests recorded by the mock")
sent = sent_messages(r[1])
expect_eq([m["role"] for m in sent], ["system", "user", "assistant", "tool", "tool"], "roles sent in request 2")
expect_eq([c["id"] for c in sent[2]["tool_calls"]], ["call_write_1", "call_env_2"], "tool_calls sent back")
expect_eq(sent[2]["tool_calls"][0]["function"]["name"], "bash", "function name sent back")
tools = of_role(t, "tool")
for i, m in enumerate(sent[3:5]):
    expect_eq(m.get("tool_call_id"), tools[i]["tool_call_id"], f"tool_call_id of sent tool message {i}")
    expect_eq(m.get("content"), tools[i]["content"], f"content of sent tool message {i}")
for req in r:
    for m in sent_messages(req):
        assert "extra" not in m, "a message with 'extra' was sent to the API"
PY
    jcheck "openai/$mode: POST /v1/chat/completions, Bearer key, prefix-less model, one bash tool" <<'PY'
r = requests()
for req in r:
    expect_eq(req["path"], "/v1/chat/completions", "request path")
    expect_eq(req["headers"].get("authorization"), "Bearer " + KEY, "Authorization header")
    expect_eq(req["body"].get("model"), "gpt-test", "model sent")
tools = r[0]["body"].get("tools") or []
expect_eq([x["function"]["name"] for x in tools], ["bash"], "tools offered")
PY
    if [[ -f $WS/model-file.txt && $(cat "$WS/model-file.txt") == "written by the model" ]]; then
        pass "openai/$mode: the file the model wrote is in the workspace"
    else
        fail "openai/$mode: the file the model wrote is in the workspace" "$(ls -la "$WS")"
    fi
    jcheck "openai/$mode: the key is in no config/info section of the trajectory, nor on mini's stdout/stderr" \
        OUT_ERR="$OUT$ERR" <<'PY'
import json, os
t = load_traj()
assert KEY not in json.dumps(t["info"]), "the API key is in the trajectory's info section"
assert KEY not in os.environ["OUT_ERR"], "the API key was printed by mini"
PY
}

scenario "OpenAI tool calling under --sandbox strict (default config, private daemon)"
# Under strict the command also prints the environment of every process it
# can see (its own pid namespace: the sandbox's init and itself).
mock_start "$(openai_turns '; echo PROC-ENVIRONS; for f in /proc/[0-9]*/environ; do tr "\0" "\n" <"$f"; done 2>/dev/null')"
openai_env MSWEA_COST_TRACKING=ignore_errors MINI_E2E_CANARY="$CANARY"
mrun -y --exit-immediately -m openai/gpt-test --sandbox strict --workspace "$WS" -t "write a file" -o "$TRAJ"
openai_common_checks strict
jcheck "openai/strict: no environment in the sandbox holds the key's value or name, or mini's variables" \
    CANARY="$CANARY" <<'PY'
import os
t = load_traj()
env_obs = of_role(t, "tool")[1]
out = env_obs["extra"].get("raw_output", "") + env_obs["content"]
assert "key=[]" in out, "expected an empty $OPENAI_API_KEY: " + short(out, 600)
assert KEY not in out, "the API key's value reached the sandbox: " + short(out, 600)
assert "OPENAI_API_KEY" not in out, "the variable OPENAI_API_KEY reached the sandbox"
assert "OPENAI_BASE_URL" not in out, "OPENAI_BASE_URL reached the sandbox"
assert os.environ["CANARY"] not in out, "a variable of mini's environment reached the sandbox"
assert "PROC-ENVIRONS" in out and out.count("PATH=") >= 2, "the /proc scan did not run: " + short(out, 600)
lines = env_obs["extra"]["raw_output"].splitlines()
expect_eq(lines[0], WS, "pwd of the command (the workspace)")
assert KEY not in traj_text(), "the API key is somewhere in the trajectory file"
expect_eq(t["info"]["config"]["environment"].get("profile"), "strict", "info.config.environment.profile")
PY
mock_stop

scenario "OpenAI tool calling under --sandbox off (prices from model_kwargs)"
mock_start "$(openai_turns '')"
openai_env MINI_E2E_CANARY="$CANARY"
mrun -y --exit-immediately -m openai/gpt-test --sandbox off --workspace "$WS" -t "write a file" -o "$TRAJ" \
    -c mini -c model.model_kwargs.input_cost_per_token=0.000001 -c model.model_kwargs.output_cost_per_token=0.00001
openai_common_checks off
# mini-swe-agent's LocalEnvironment runs commands with os.environ | env:
# `--sandbox off` does the same, so the command sees mini's variables, the
# API key among them.  That is what `off` means (docs/config.md); the
# key still stays out of the trajectory's config and info sections.
jcheck "openai/off: like mini-swe-agent's LocalEnvironment, the command inherits mini's environment (key included)" \
    CANARY="$CANARY" <<'PY'
import os
t = load_traj()
env_obs = of_role(t, "tool")[1]
raw = env_obs["extra"]["raw_output"]
assert "key=[" + KEY + "]" in raw, "expected $OPENAI_API_KEY to be inherited under --sandbox off: " + short(raw, 400)
assert os.environ["CANARY"] in raw, "mini's environment was not inherited"
assert "PAGER=cat" in raw, "environment.env of the config did not reach the command"
expect_eq(raw.splitlines()[0], WS, "pwd of the command (the workspace)")
PY
jcheck "openai/off: cost from usage and model_kwargs prices (1000/100 + 2000/50 tokens = \$0.0045)" <<'PY'
t = load_traj()
assert abs(cost(t) - 0.0045) < 1e-9, f"instance_cost {cost(t)!r}, expected 0.0045"
costs = [m["extra"]["cost"] for m in of_role(t, "assistant")]
assert abs(costs[0] - 0.002) < 1e-12 and abs(costs[1] - 0.0025) < 1e-12, f"per-call costs {costs}"
PY
mock_stop

scenario "model_kwargs.api_key from the config is used and redacted"
mock_start "$(turns '[{"tool_calls": [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}]}]')"
CFG_KEY=sk-config-secret-$RUN_TAG
MENV=(OPENAI_BASE_URL="http://127.0.0.1:$MOCK_PORT/v1")
mrun -y --exit-immediately -m openai/gpt-test --sandbox off --workspace "$WS" -t task -o "$TRAJ" \
    -c mini -c model.cost_tracking=ignore_errors -c "model.model_kwargs.api_key=$CFG_KEY"
expect_rc_last "config api_key: mini exits 0" 0
jcheck "config api_key: sent as the Bearer token, '***' in the trajectory, nowhere else in it" KEY="$CFG_KEY" <<'PY'
t = load_traj()
expect_eq(requests()[0]["headers"].get("authorization"), "Bearer " + KEY, "Authorization header")
assert KEY not in traj_text(), "the config's api_key is in the trajectory"
expect_eq(t["info"]["config"]["model"]["model_kwargs"].get("api_key"), "***", "info.config.model.model_kwargs.api_key")
PY
mock_stop

scenario "a shared daemon whose own environment holds the key; forward_env"
OPENAI_API_KEY=$KEY start_daemon
if tr '\0' '\n' <"/proc/$DAEMON_PID/environ" 2>/dev/null | grep -qxF "OPENAI_API_KEY=$KEY"; then
    pass "shared daemon: its environment holds the key (so the next check means something)"
else
    fail "shared daemon: its environment holds the key (so the next check means something)"
fi
MENV=(OPENAI_API_KEY="$KEY" MINI_E2E_FWD="forwarded-$RUN_TAG")
mrun -y --exit-immediately -c mini --model-class deterministic -l 0 --sandbox strict --workspace "$WS" -t task \
    -o "$TRAJ" -c "environment.socket=$SOCK" -c 'environment.forward_env=["MINI_E2E_FWD"]' \
    -c 'environment.env={"MINI_E2E_CFGENV": "from-the-config"}' \
    -c "model.outputs=$(json_strs "$(block 'echo "key=[$OPENAI_API_KEY]"; env')" "$(block "$SUBMIT")")"
expect_rc_last "shared daemon: mini exits 0" 0
jcheck "shared daemon: environment.env and forward_env names pass; neither mini's nor the daemon's key does" <<'PY'
t = load_traj()
raw = of_role(t, "user")[1]["extra"]["raw_output"]
assert "key=[]" in raw and KEY not in raw and "OPENAI_API_KEY" not in raw, "the key reached the command: " + short(raw, 500)
assert "MINI_E2E_FWD=forwarded-" in raw, "environment.forward_env did not pass MINI_E2E_FWD: " + short(raw, 500)
assert "MINI_E2E_CFGENV=from-the-config" in raw, "environment.env did not reach the command: " + short(raw, 500)
assert "PAGER=cat" in raw, "environment.env of the mini config was lost by merging another env mapping"
expect_status(t, "Submitted")
PY
stop_daemon >/dev/null 2>&1 || true

scenario "defaults: the workspace is the current directory, the trajectory goes to the global directory"
MRUN_CWD=$WS mrun -y --exit-immediately -c mini_textbased --model-class deterministic -l 0 --sandbox strict -t task \
    -c "model.outputs=$(json_strs "$(block 'pwd > where.txt; echo made > made.txt')" "$(block "$SUBMIT")")"
expect_rc_last "defaults: mini exits 0" 0
if [[ $(cat "$WS/where.txt" 2>/dev/null) == "$WS" && -f $WS/made.txt ]]; then
    pass "defaults: without --workspace the commands run in (and write to) the current directory"
else
    fail "defaults: without --workspace the commands run in (and write to) the current directory" \
        "where.txt: $(cat "$WS/where.txt" 2>&1)"
fi
TRAJ=$T/gcfg/last_mini_run.traj.json jcheck "defaults: without -o the trajectory is last_mini_run.traj.json in the global directory" <<'PY'
expect_status(load_traj(), "Submitted")
PY

# ==== 2. Anthropic tool use ==============================================
scenario "Anthropic tool use under --sandbox strict"
mock_start "$(turns '[
 {"text": "Let me write a file.", "tool_calls": [{"id": "toolu_e2e_1", "command": "echo anthropic-step > a.txt && cat a.txt"}],
  "usage": {"input": 10, "output": 5}},
 {"tool_calls": [{"id": "toolu_e2e_2", "command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; echo claude done"}],
  "usage": {"input": 20, "output": 5}}]')"
anthropic_env MSWEA_COST_TRACKING=ignore_errors
mrun -y --exit-immediately -m anthropic/claude-test --sandbox strict --workspace "$WS" -t "write a.txt" -o "$TRAJ"
expect_rc_last "anthropic: mini exits 0 after the submission" 0
jcheck "anthropic: trajectory Submitted, OpenAI-shaped messages, tool message for toolu_e2e_1" <<'PY'
t = load_traj()
expect_status(t, "Submitted")
expect_eq(t["info"].get("submission"), "claude done\n", "info.submission")
# The submitting tool call is answered as not executed (InteractiveAgent).
expect_eq(roles(t), ["system", "user", "assistant", "tool", "assistant", "tool", "exit"], "roles")
expect_eq(of_role(t, "tool")[1].get("tool_call_id"), "toolu_e2e_2", "the submitting call's answer")
a = of_role(t, "assistant")[0]
expect_eq([c["id"] for c in a.get("tool_calls", [])], ["toolu_e2e_1"], "assistant tool_calls ids")
tool = of_role(t, "tool")[0]
expect_eq(tool.get("tool_call_id"), "toolu_e2e_1", "tool message tool_call_id")
assert "anthropic-step" in tool["content"], short(tool["content"])
assert KEY not in traj_text(), "the API key is in the trajectory"
PY
jcheck "anthropic: POST /v1/messages with x-api-key and anthropic-version; system on top; bash tool" <<'PY'
r = requests()
expect_eq(len(r), 2, "requests recorded")
for req in r:
    expect_eq(req["path"], "/v1/messages", "request path")
    expect_eq(req["headers"].get("x-api-key"), KEY, "x-api-key header")
    assert req["headers"].get("anthropic-version"), "no anthropic-version header"
    assert KEY not in req["headers"].get("authorization", ""), "the key was also sent as Authorization"
    b = req["body"]
    expect_eq(b.get("model"), "claude-test", "model sent")
    assert b.get("system"), "no top-level system"
    assert all(m["role"] in ("user", "assistant") for m in b["messages"]), "roles: %r" % [m["role"] for m in b["messages"]]
    assert b.get("max_tokens"), "no max_tokens"
expect_eq([x["name"] for x in r[0]["body"].get("tools", [])], ["bash"], "tools offered")
PY
jcheck "anthropic: the next request answers tool_use toolu_e2e_1 with a tool_result" <<'PY'
msgs = requests()[1]["body"]["messages"]
asst = msgs[-2]
expect_eq(asst["role"], "assistant", "role of the second-to-last message")
uses = [b for b in asst["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
expect_eq([u["id"] for u in uses], ["toolu_e2e_1"], "tool_use ids sent back")
expect_eq(uses[0]["input"], {"command": "echo anthropic-step > a.txt && cat a.txt"}, "tool_use input")
last = msgs[-1]
expect_eq(last["role"], "user", "role of the last message")
res = [b for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
expect_eq([b["tool_use_id"] for b in res], ["toolu_e2e_1"], "tool_result ids")
expect_eq(last["content"][0].get("type"), "tool_result", "first block of the user turn")
c = res[0]["content"]
text = c if isinstance(c, str) else "".join(x.get("text", "") for x in c)
assert "anthropic-step" in text and "<returncode>0</returncode>" in text, "tool_result content: " + short(text)
PY
if [[ $(cat "$WS/a.txt" 2>/dev/null) == anthropic-step ]]; then pass "anthropic: the file is in the workspace"
else fail "anthropic: the file is in the workspace"; fi
mock_stop

# ==== 3. text mode and format errors ======================================
BAD0='I am still thinking; no command in this reply.'
BAD2=$(printf 'Two commands:\n\n```mswea_bash_command\nls\n```\n\nand\n\n```mswea_bash_command\npwd\n```')
GOOD=$(block 'echo good-step')

scenario "text mode against the mock: 0 blocks, 2 blocks, good, submit (strict)"
mock_start "$(BAD0=$BAD0 BAD2=$BAD2 GOOD=$GOOD python3 -c '
import json, os
print(json.dumps([{"text": os.environ["BAD0"]}, {"text": os.environ["BAD2"]}, {"text": os.environ["GOOD"]},
                  {"text": "Submitting.\n\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; echo text-mode-sub\n```"}]))')"
openai_env
mrun -y --exit-immediately -c mini_textbased -c model.cost_tracking=ignore_errors -m openai/gpt-test \
    --sandbox strict --workspace "$WS" -t task -o "$TRAJ"
expect_rc_last "text mode: mini exits 0" 0
jcheck "text mode: format errors are user messages, not assistant messages; every call counted" BAD0="$BAD0" <<'PY'
import os
t = load_traj()
expect_status(t, "Submitted")
expect_eq(t["info"]["submission"], "text-mode-sub\n", "submission")
expect_eq(roles(t), ["system", "user", "user", "user", "assistant", "user", "assistant", "exit"], "roles")
fe = [m for m in of_role(t, "user") if m.get("extra", {}).get("interrupt_type") == "FormatError"]
expect_eq(len(fe), 2, "format-error messages")
assert "had 0 " in fe[0]["content"] and "had 2 " in fe[1]["content"], \
    "format error texts: " + short(fe[0]["content"]) + " / " + short(fe[1]["content"])
for m in of_role(t, "assistant"):
    assert os.environ["BAD0"] not in m.get("content", "") and "Two commands" not in m.get("content", ""), \
        "a bad reply was added as an assistant message"
expect_eq(calls(t), 4, "api_calls (format errors included)")
PY
jcheck "text mode: the requests after format errors carry no assistant message for them, and no tools" <<'PY'
r = requests()
expect_eq(len(r), 4, "requests recorded")
expect_eq([m["role"] for m in sent_messages(r[2])], ["system", "user", "user", "user"], "roles sent in request 3")
expect_eq([m["role"] for m in sent_messages(r[3])], ["system", "user", "user", "user", "assistant", "user"],
          "roles sent in request 4")
assert "good-step" in sent_messages(r[3])[-1]["content"], "the observation of the good step was not sent"
assert not r[0]["body"].get("tools"), "text mode offered tools"
PY
mock_stop

scenario "format-error counter resets after a good step (max 3: bad,bad,good,bad,bad,good,submit)"
mrun -y --exit-immediately -c mini_textbased --model-class deterministic -c agent.max_consecutive_format_errors=3 \
    --sandbox off --workspace "$WS" -t task -o "$TRAJ" -l 0 \
    -c "model.outputs=$(json_strs "$BAD0" "$BAD2" "$GOOD" "$BAD2" "$BAD0" "$GOOD" "$(block "$SUBMIT; echo reset-ok")")"
expect_rc_last "format errors 2+2 with a good step between: exit 0" 0
jcheck "format errors 2+2 with a good step between: Submitted after 7 calls, 4 format errors, 3 assistant messages" <<'PY'
t = load_traj()
expect_status(t, "Submitted")
expect_eq(t["info"]["submission"], "reset-ok\n", "submission")
expect_eq(calls(t), 7, "api_calls")
expect_eq(cost(t), 7, "instance_cost (cost_per_call 1, format errors included)")
fe = [m for m in t["messages"] if m.get("extra", {}).get("interrupt_type") == "FormatError"]
expect_eq(len(fe), 4, "format-error messages")
expect_eq(len(of_role(t, "assistant")), 3, "assistant messages")
PY

scenario "three format errors in a row end the run (RepeatedFormatError)"
mrun -y --exit-immediately -c mini_textbased --model-class deterministic -c agent.max_consecutive_format_errors=3 \
    --sandbox off --workspace "$WS" -t task -o "$TRAJ" -l 0 \
    -c "model.outputs=$(json_strs "$BAD0" "$BAD2" "$BAD0" "$GOOD" "$(block "$SUBMIT")")"
expect_rc_last "bad,bad,bad: exit 1" 1
jcheck "bad,bad,bad: RepeatedFormatError after exactly 3 calls, no assistant message" <<'PY'
t = load_traj()
expect_status(t, "RepeatedFormatError")
expect_eq(calls(t), 3, "api_calls")
expect_eq(of_role(t, "assistant"), [], "assistant messages")
expect_eq(roles(t), ["system", "user", "user", "user", "user", "exit"], "roles")
PY

# ==== 4. limits ==========================================================
STEP_TURNS=$(turns '[{"tool_calls": [{"command": "echo step-%d" % i}]} for i in range(3)]')

scenario "step_limit=1 (mock, strict)"
mock_start "$STEP_TURNS"
openai_env
mrun -y --exit-immediately -m openai/gpt-test -c mini -c model.cost_tracking=ignore_errors -c agent.step_limit=1 \
    --sandbox strict --workspace "$WS" -t task -o "$TRAJ"
expect_rc_last "step_limit=1: exit 1" 1
jcheck "step_limit=1: LimitsExceeded after exactly one model call (one request), its command run" <<'PY'
t = load_traj()
expect_status(t, "LimitsExceeded")
expect_eq(len(requests()), 1, "requests recorded")
expect_eq(calls(t), 1, "api_calls")
expect_eq(roles(t), ["system", "user", "assistant", "tool", "exit"], "roles")
assert "step-0" in of_role(t, "tool")[0]["content"]
PY
mock_stop

scenario "cost limit from usage and prices (mock): \$1 per call, -l 1.5"
mock_start "$(turns '[{"tool_calls": [{"command": "echo step-%d" % i}], "usage": {"input": 1000, "output": 0}} for i in range(4)]')"
openai_env
mrun -y --exit-immediately -m openai/gpt-test -c mini -c model.model_kwargs.input_cost_per_token=0.001 \
    -c model.model_kwargs.output_cost_per_token=0.001 -l 1.5 --sandbox off --workspace "$WS" -t task -o "$TRAJ"
expect_rc_last "cost limit (mock): exit 1" 1
jcheck "cost limit (mock): LimitsExceeded after 2 calls, cost \$2" <<'PY'
t = load_traj()
expect_status(t, "LimitsExceeded")
expect_eq(len(requests()), 2, "requests recorded")
expect_eq(calls(t), 2, "api_calls")
assert abs(cost(t) - 2.0) < 1e-9, f"instance_cost {cost(t)}"
PY
mock_stop

scenario "cost limit with the deterministic model: cost_per_call 1, -l 1.5"
mrun -y --exit-immediately -c mini_textbased --model-class deterministic -c model.cost_per_call=1 -l 1.5 \
    --sandbox off --workspace "$WS" -t task -o "$TRAJ" \
    -c "model.outputs=$(json_strs "$(block 'echo one')" "$(block 'echo two')" "$(block 'echo three')" "$(block "$SUBMIT")")"
expect_rc_last "cost limit (deterministic): exit 1" 1
jcheck "cost limit (deterministic): LimitsExceeded after the second call" <<'PY'
t = load_traj()
expect_status(t, "LimitsExceeded")
expect_eq(calls(t), 2, "api_calls")
expect_eq(cost(t), 2, "instance_cost")
expect_eq(len(of_role(t, "assistant")), 2, "assistant messages")
PY

scenario "wall_time_limit_seconds=1 with a 2 s command (strict)"
mrun -y --exit-immediately -c mini_textbased --model-class deterministic -l 0 -c agent.wall_time_limit_seconds=1 \
    --sandbox strict --workspace "$WS" -t task -o "$TRAJ" \
    -c "model.outputs=$(json_strs "$(block 'sleep 2; echo slept')" "$(block 'echo after > after.txt')" "$(block "$SUBMIT")")"
expect_rc_last "wall time: exit 1" 1
jcheck "wall time: TimeExceeded after the first step; the second command never ran" ELAPSED_MS="$ELAPSED_MS" <<'PY'
import os
t = load_traj()
expect_status(t, "TimeExceeded")
expect_eq(calls(t), 1, "api_calls")
assert "slept" in of_role(t, "user")[1]["content"], "the 2 s command did not finish"
assert not os.path.exists(os.path.join(WS, "after.txt")), "the second command ran"
assert int(os.environ["ELAPSED_MS"]) < 15000, "took " + os.environ["ELAPSED_MS"] + " ms"
PY

# ==== 5. a 12001-character output ========================================
scenario "12001 characters with the built-in mini template (mock, strict)"
python3 -c '
import random, string, sys
r = random.Random(12001)
sys.stdout.write("".join(r.choice(string.ascii_letters + string.digits) for _ in range(12000)) + "\n")' >"$WS/big.txt"
mock_start "$(turns '[{"tool_calls": [{"id": "call_big", "command": "cat big.txt"}]},
                      {"tool_calls": [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}]}]')"
openai_env MSWEA_COST_TRACKING=ignore_errors
mrun -y --exit-immediately -m openai/gpt-test --sandbox strict --workspace "$WS" -t task -o "$TRAJ"
expect_rc_last "12001 chars (built-in): exit 0" 0
jcheck "12001 chars (built-in): first 5000, last 5000, '2001 characters elided', exactly as the template says" <<'PY'
import os
s = open(os.path.join(WS, "big.txt"), encoding="utf-8").read()
expect_eq(len(s), 12001, "length of the output")
t = load_traj()
obs = of_role(t, "tool")[0]
expect_eq(obs["extra"]["raw_output"], s, "extra.raw_output (the whole output)")
want = ("<returncode>0</returncode>\n<output_head>\n" + s[:5000] + "\n</output_head>\n"
        "<elided_chars>2001 characters elided</elided_chars>\n<output_tail>\n" + s[-5000:] + "\n</output_tail>\n"
        "<note>The output was too long to show in full. Run a command that prints\n"
        "less: filter with grep, show part of a file with head, tail or sed -n, or\n"
        "send the output to a file and search that.</note>")
if obs["content"] != want:
    import difflib
    d = "".join(difflib.unified_diff(want.splitlines(True), obs["content"].splitlines(True), "expected", "got", n=1))
    raise AssertionError("observation differs:\n" + short(d, 1500))
try:
    import jinja2
except ImportError:
    jinja2 = None
if jinja2:
    tpl = t["info"]["config"]["model"]["observation_template"]
    ref = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(tpl).render(
        output={"output": s, "returncode": 0, "exception_info": ""})
    expect_eq(obs["content"], ref, "the observation vs. Jinja2's rendering of the same template")
sent = sent_messages(requests()[1])[-1]["content"]
expect_eq(sent, want, "the observation as sent to the model")
PY
mock_stop

scenario "12001 multi-byte characters with a mini-swe-agent-style template (off)"
cat >"$T/mswea_style.yaml" <<'EOF'
# mini-swe-agent's long-output observation template (its mini.yaml), as a
# user would bring it.
model:
  observation_template: |
    <returncode>{{output.returncode}}</returncode>
    {% if output.output | length < 10000 -%}
    <output>
    {{ output.output -}}
    </output>
    {%- else -%}
    <warning>
    The output of your last command was too long.
    Please try a different command that produces less output.
    </warning>
    {%- set elided_chars = output.output | length - 10000 -%}
    <output_head>
    {{ output.output[:5000] }}
    </output_head>
    <elided_chars>
    {{ elided_chars }} characters elided
    </elided_chars>
    <output_tail>
    {{ output.output[-5000:] }}
    </output_tail>
    {%- endif -%}
EOF
python3 -c '
import random, sys
r = random.Random(2001)
sys.stdout.buffer.write(("".join(r.choice("aé日€🙂z") for _ in range(12000)) + "\n").encode())' >"$WS/big.txt"
mrun -y --exit-immediately -c mini_textbased -c "$T/mswea_style.yaml" --model-class deterministic -l 0 \
    --sandbox off --workspace "$WS" -t task -o "$TRAJ" \
    -c "model.outputs=$(json_strs "$(block 'cat big.txt')" "$(block "$SUBMIT")")"
expect_rc_last "12001 multi-byte chars: exit 0" 0
jcheck "12001 multi-byte chars: head/tail/elided count code points, byte for byte as Jinja2 renders it" <<'PY'
import os
s = open(os.path.join(WS, "big.txt"), encoding="utf-8").read()
expect_eq(len(s), 12001, "length of the output in characters")
assert len(s.encode()) > 24000, "the output is not multi-byte"
t = load_traj()
obs = of_role(t, "user")[1]
want = ("<returncode>0</returncode>\n<warning>\nThe output of your last command was too long.\n"
        "Please try a different command that produces less output.\n</warning><output_head>\n" + s[:5000] +
        "\n</output_head>\n<elided_chars>\n2001 characters elided\n</elided_chars>\n<output_tail>\n" + s[-5000:] +
        "\n</output_tail>")
if obs["content"] != want:
    import difflib
    d = "".join(difflib.unified_diff(want.splitlines(True), obs["content"].splitlines(True), "expected", "got", n=1))
    raise AssertionError("observation differs:\n" + short(d, 1500))
try:
    import jinja2
except ImportError:
    jinja2 = None
if jinja2:
    tpl = t["info"]["config"]["model"]["observation_template"]
    ref = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(tpl).render(
        output={"output": s, "returncode": 0, "exception_info": ""})
    expect_eq(obs["content"], ref, "the observation vs. Jinja2's rendering")
PY

# ==== 6. command timeouts ================================================
for mode in strict off; do
    scenario "environment.timeout=1 and 'echo partial; sleep 8' ($mode)"
    S_TO=$(uniq_sleep 8)
    mrun -y --exit-immediately -c mini_textbased --model-class deterministic -l 0 -c environment.timeout=1 \
        --sandbox "$mode" --workspace "$WS" -t task -o "$TRAJ" \
        -c "model.outputs=$(json_strs "$(block "echo partial; sleep $S_TO")" "$(block "$SUBMIT; echo went-on")")"
    expect_rc_last "timeout ($mode): the run goes on to the submission (exit 0)" 0
    jcheck "timeout ($mode): the observation says it timed out and keeps 'partial'; killed after ~1 s" \
        ELAPSED_MS="$ELAPSED_MS" <<'PY'
import os
t = load_traj()
expect_status(t, "Submitted")
expect_eq(t["info"]["submission"], "went-on\n", "submission")
obs = of_role(t, "user")[1]
c = obs["content"]
assert "<returncode>-1</returncode>" in c, "returncode: " + short(c)
assert "timed out" in c, "the observation does not say it timed out: " + short(c, 600)
assert "partial" in c, "the partial output is lost: " + short(c, 600)
assert int(os.environ["ELAPSED_MS"]) < 6000, "the run took " + os.environ["ELAPSED_MS"] + " ms: the 8 s command was not cut at 1 s"
PY
    if wait_until 3 cmd_gone "sleep $S_TO"; then pass "timeout ($mode): the timed-out command is not left running"
    else fail "timeout ($mode): the timed-out command is not left running"; cmd_kill "sleep $S_TO"; fi
done

scenario "no environment.timeout under a profile whose limit is 2 s: the profile's limit applies"
python3 - "$MINI_SOURCE_DIR/profiles/strict.json" "$T/short.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["name"] = "short"
p["limits"]["timeout_s"] = 2
json.dump(p, open(sys.argv[2], "w"), indent=1)
PY
S_PR=$(uniq_sleep 4)
mrun -y --exit-immediately -c mini_textbased --model-class deterministic -l 0 \
    --sandbox "$T/short.json" --workspace "$WS" -t task -o "$TRAJ" \
    -c "model.outputs=$(json_strs "$(block "echo partial; sleep $S_PR")" "$(block "$SUBMIT")")"
jcheck "profile limit: environment.timeout 0 means the profile's limit: the command runs and is stopped at 2 s" <<'PY'
t = load_traj()
c = of_role(t, "user")[1]["content"]
assert "partial" in c and "timed out" in c, "expected the command to run and time out: " + short(c, 600)
expect_status(t, "Submitted")
PY
cmd_kill "sleep $S_PR"

# ==== 7. Ctrl-C and crashes ==============================================
for mode in strict off; do
    scenario "SIGINT while a command runs ($mode)"
    S_INT=$(uniq_sleep 30)
    mstart -y --exit-immediately -c mini_textbased --model-class deterministic -l 0 --sandbox "$mode" \
        --workspace "$WS" -t task -o "$TRAJ" \
        -c "model.outputs=$(json_strs "$(block 'echo step-one')" "$(block "sleep $S_INT")" "$(block "$SUBMIT")")"
    if wait_until 20 test -s "$TRAJ" && wait_until 10 cmd_running "sleep $S_INT"; then
        daemons=$(private_daemons_of "$MINI_PID")
        kill -INT "$MINI_PID"
        mwait 10
        if [[ $RC == 130 ]] && (( ELAPSED_MS < 5000 )); then
            pass "SIGINT ($mode): mini exits 130 within 5 s (${ELAPSED_MS} ms)"
        else
            fail "SIGINT ($mode): mini exits 130 within 5 s" "status $RC after ${ELAPSED_MS} ms"
        fi
        jcheck "SIGINT ($mode): the trajectory is valid, KeyboardInterrupt, the first step kept" <<'PY'
t = load_traj()
expect_status(t, "KeyboardInterrupt")
assert any("step-one" in m.get("content", "") for m in of_role(t, "user")), "the first step's observation is lost"
assert KEY not in traj_text()
PY
        if wait_until 5 cmd_gone "sleep $S_INT"; then pass "SIGINT ($mode): the running command is gone"
        else fail "SIGINT ($mode): the running command is gone"; cmd_kill "sleep $S_INT"; fi
        if [[ $mode == strict ]]; then
            # shellcheck disable=SC2086
            if [[ -n $daemons ]] && wait_until 5 pids_gone $daemons; then pass "SIGINT (strict): the private daemon is gone"
            else fail "SIGINT (strict): the private daemon is gone" "daemon pids: '${daemons}'"; fi
        fi
    else
        fail "SIGINT ($mode): the run got to its long command" "$(cat "$T/bg.err")"
        kill -KILL "$MINI_PID" 2>/dev/null || true
        mwait 5
        cmd_kill "sleep $S_INT"
    fi
done

scenario "SIGINT during a model request (mock answers after 30 s)"
mock_start "$(turns '[{"delay": 30, "tool_calls": [{"command": "echo late"}]}]')"
openai_env MSWEA_COST_TRACKING=ignore_errors
mstart -y --exit-immediately -m openai/gpt-test --sandbox strict --workspace "$WS" -t task -o "$TRAJ"
if wait_until 20 test -s "$REC"; then
    kill -INT "$MINI_PID"
    mwait 10
    if [[ $RC == 130 ]] && (( ELAPSED_MS < 5000 )); then pass "SIGINT in a request: mini exits 130 within 5 s (${ELAPSED_MS} ms)"
    else fail "SIGINT in a request: mini exits 130 within 5 s" "status $RC after ${ELAPSED_MS} ms"; fi
    jcheck "SIGINT in a request: the trajectory is valid, KeyboardInterrupt" <<'PY'
t = load_traj()
expect_status(t, "KeyboardInterrupt")
expect_eq(roles(t), ["system", "user", "exit"], "roles")
PY
else
    fail "SIGINT in a request: the request reached the mock" "$(cat "$T/bg.err")"
    kill -KILL "$MINI_PID" 2>/dev/null || true
    mwait 5
fi
mock_stop

# bash reports a background job killed by a signal ("Killed") on its stderr
# whenever it notices; keep that notice out of the log for the kill -9 runs.
exec 3>&2 2>/dev/null
scenario "kill -9 while a sandboxed command runs (strict)"
S_K9=$(uniq_sleep 30)
mstart -y --exit-immediately -c mini_textbased --model-class deterministic -l 0 --sandbox strict \
    --workspace "$WS" -t task -o "$TRAJ" \
    -c "model.outputs=$(json_strs "$(block 'echo step-one')" "$(block "sleep $S_K9")" "$(block "$SUBMIT")")"
if wait_until 20 test -s "$TRAJ" && wait_until 10 cmd_running "sleep $S_K9"; then
    daemons=$(private_daemons_of "$MINI_PID")
    kill -KILL "$MINI_PID" 2>/dev/null
    mwait 10
    jcheck "kill -9: the trajectory is still valid JSON with the steps saved before" <<'PY'
t = load_traj()
expect_eq(roles(t)[:4], ["system", "user", "assistant", "user"], "roles saved")
assert "step-one" in t["messages"][3]["content"]
PY
    tmps=$(find "$T" -maxdepth 1 -name "traj.$SCEN.json.tmp*" | wc -l)
    if (( tmps <= 1 )); then pass "kill -9: at most one temporary file beside the trajectory ($tmps)"
    else fail "kill -9: at most one temporary file beside the trajectory" "$tmps found"; fi
    if wait_until 5 cmd_gone "sleep $S_K9"; then pass "kill -9 (strict): the sandboxed command dies with mini"
    else fail "kill -9 (strict): the sandboxed command dies with mini"; cmd_kill "sleep $S_K9"; fi
    # shellcheck disable=SC2086
    if [[ -n $daemons ]] && wait_until 5 pids_gone $daemons; then pass "kill -9 (strict): the private daemon is gone"
    else fail "kill -9 (strict): the private daemon is gone" "daemon pids: '${daemons}'"; fi
else
    fail "kill -9: the run got to its long command" "$(cat "$T/bg.err")"
    kill -KILL "$MINI_PID" 2>/dev/null || true
    mwait 5
    cmd_kill "sleep $S_K9"
fi

scenario "kill -9 at random moments of a fast run (off): the trajectory is always valid"
MANY=$(python3 -c '
import json
b = "THOUGHT: go.\n\n```mswea_bash_command\n%s\n```"
print(json.dumps([b % "true"] * 2000 + [b % "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]))')
bad=()
saved=()
for i in $(seq 1 20); do
    out=$T/crash.$i.json
    mstart -y --exit-immediately -c mini_textbased --model-class deterministic -l 0 --sandbox off \
        --workspace "$WS" -t task -o "$out" -c "model.outputs=$MANY"
    if ! wait_until 20 test -s "$out"; then
        bad+=("run $i: no trajectory appeared")
        kill -KILL "$MINI_PID" 2>/dev/null || true
        mwait 5
        continue
    fi
    sleep "0.$((RANDOM % 4))$((RANDOM % 10))"
    kill -KILL "$MINI_PID" 2>/dev/null || true
    mwait 10
    if ! r=$(TRAJ=$out PYTHONPATH=$AGENT_TEST_DIR PYTHONDONTWRITEBYTECODE=1 python3 -c '
from agent_check import *
t = load_traj()
assert roles(t)[:2] == ["system", "user"], "roles: %r" % roles(t)[:5]
assert roles(t)[-1] != "exit", "the run had ended before the kill: nothing was tested"
print(len(t["messages"]))' 2>&1); then
        bad+=("run $i: $r")
    else
        saved+=("$r")
    fi
    tmps=$(find "$T" -maxdepth 1 -name "crash.$i.json.tmp*" | wc -l)
    (( tmps <= 1 )) || bad+=("run $i: $tmps temporary files")
    # The next run with the same -o removes what the killed one left.
    mrun -y --exit-immediately -c mini_textbased --model-class deterministic -l 0 --sandbox off \
        --workspace "$WS" -t task -o "$out" -c "model.outputs=$(json_strs "$(block "$SUBMIT")")"
    tmps=$(find "$T" -maxdepth 1 -name "crash.$i.json.tmp*" | wc -l)
    (( RC == 0 && tmps == 0 )) || bad+=("run $i: after the next run to the same file: status $RC, $tmps temporary files")
done
if [[ ${#bad[@]} == 0 ]]; then
    pass "kill -9 x20 at random moments: valid trajectory each time, at most one temp file, none after the next run (messages saved: ${saved[*]})"
else fail "kill -9 x20 at random moments: valid trajectory each time, at most one temp file, none after the next run" "${bad[@]}"; fi
exec 2>&3 3>&-

# ==== 8b. the trajectory path, checked before the first model call ========
scenario "-o in a directory that does not exist yet: made, as mini-swe-agent does"
NEWDIR=$T/new-dir-$RUN_TAG/sub
mrun -y --exit-immediately -c mini_textbased --model-class deterministic --sandbox off --workspace "$WS" -t task \
    -o "$NEWDIR/t.json" -c "model.outputs=$(json_strs "$(block "$SUBMIT")")"
if [[ $RC == 0 && -s $NEWDIR/t.json ]] && contains "$ERR" "trajectory: $NEWDIR/t.json"; then
    pass "-o NEW/DIR/t.json: the directory is made and the trajectory written"
else
    fail "-o NEW/DIR/t.json: the directory is made and the trajectory written" "status $RC; $ERR"
fi
scenario "-o where nothing can be written: refused before the model is asked"
mock_start "$(turns '[{"tool_calls": [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}]}]')"
openai_env MSWEA_COST_TRACKING=ignore_errors
BADOUT=/proc/mini-no-such-dir-$RUN_TAG/t.json
mrun -y --exit-immediately -m openai/gpt-test --sandbox off --workspace "$WS" -t task -o "$BADOUT"
if [[ $RC != 0 ]] && contains "$ERR" "trajectory $BADOUT" && [[ ! -s $REC ]] && ! contains "$ERR" "trajectory: $BADOUT"; then
    pass "-o unwritable: mini stops with the reason, no model request made, no unwritten path named"
else
    fail "-o unwritable: mini stops with the reason, no model request made, no unwritten path named" \
        "status $RC, $(wc -l <"$REC") requests; $ERR"
fi
mock_stop

# ==== 9. retries through the whole program ===============================
scenario "429 with Retry-After: 1, then a good reply"
mock_start "$(turns '[{"status": 429, "retry_after": "1"},
                      {"tool_calls": [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; echo after-429"}]}]')"
openai_env MSWEA_COST_TRACKING=ignore_errors
mrun -y --exit-immediately -m openai/gpt-test --sandbox off --workspace "$WS" -t task -o "$TRAJ"
expect_rc_last "429: the run succeeds (exit 0)" 0
jcheck "429: two requests at least 1 s apart (Retry-After honoured), Submitted, one call counted" \
    ELAPSED_MS="$ELAPSED_MS" <<'PY'
import os
t = load_traj()
expect_status(t, "Submitted")
expect_eq(t["info"]["submission"], "after-429\n", "submission")
r = requests()
expect_eq(len(r), 2, "requests recorded")
gap = r[1]["time"] - r[0]["time"]
assert gap >= 0.9, f"the retry came {gap:.3f} s after the 429"
assert int(os.environ["ELAPSED_MS"]) >= 900, "the run took " + os.environ["ELAPSED_MS"] + " ms"
expect_eq(calls(t), 1, "api_calls")
PY
mock_stop

scenario "two 500s (no Retry-After), then a good reply: fast backoff (MINI_RETRY_BASE_MS=10)"
mock_start "$(turns '[{"status": 500}, {"status": 503},
                      {"tool_calls": [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}]}]')"
openai_env MSWEA_COST_TRACKING=ignore_errors
mrun -y --exit-immediately -m openai/gpt-test --sandbox off --workspace "$WS" -t task -o "$TRAJ"
expect_rc_last "5xx: the run succeeds (exit 0)" 0
jcheck "5xx: three requests, Submitted" <<'PY'
expect_status(load_traj(), "Submitted")
expect_eq(len(requests()), 3, "requests recorded")
PY

mock_stop
scenario "401 (the server echoes the key): no retry, quick non-zero exit"
mock_start "$(KEY=$KEY python3 -c '
import json, os
print(json.dumps([{"status": 401, "message": "Incorrect API key provided: " + os.environ["KEY"]}] +
                 [{"tool_calls": [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}]}] * 3))')"
openai_env MSWEA_COST_TRACKING=ignore_errors
mrun -y --exit-immediately -m openai/gpt-test --sandbox off --workspace "$WS" -t task -o "$TRAJ"
if [[ $RC != 0 && $RC != 124 ]] && (( ELAPSED_MS < 5000 )) && [[ $ERR == *401* ]]; then
    pass "401: non-zero exit within 5 s (${ELAPSED_MS} ms), the status on stderr"
else
    fail "401: non-zero exit within 5 s, the status on stderr" "status $RC after ${ELAPSED_MS} ms"
fi
jcheck "401: exactly one request; the echoed key is neither printed nor saved" OUT_ERR="$OUT$ERR" <<'PY'
import os
expect_eq(len(requests()), 1, "requests recorded")
assert KEY not in os.environ["OUT_ERR"], "the key was printed"
t = load_traj()
assert KEY not in traj_text(), "the key is in the trajectory"
assert status(t) not in ("", "Submitted", None), f"exit_status {status(t)!r}"
PY
mock_stop

# ==== 10. the README demo, replayed ======================================
scenario "replay demo/calc.traj.json on a copy of demo/calc (strict)"
cp -r "$MINI_SOURCE_DIR/demo/calc/." "$WS/"
unit() { (cd "$WS" && PYTHONDONTWRITEBYTECODE=1 timeout 30 python3 -m unittest -q test_calc) >/dev/null 2>&1; }
if unit; then fail "demo: the test fails before the run"; else pass "demo: the test fails before the run"; fi
mrun --sandbox strict --workspace "$WS" -y --exit-immediately -c mini_textbased --model-class replay \
    -c "model.replay_path=$MINI_SOURCE_DIR/demo/calc.traj.json" -t "$(cat "$MINI_SOURCE_DIR/demo/task.txt")" \
    -o "$WS/.mini.traj.json"
expect_rc_last "demo: the replayed run exits 0" 0
TRAJ=$WS/.mini.traj.json jcheck "demo: Submitted, every replayed command answered" <<'PY'
t = load_traj()
expect_status(t, "Submitted")
expect_eq(len(of_role(t, "assistant")), 5, "assistant messages replayed")
PY
if unit; then pass "demo: the test passes after the run"; else fail "demo: the test passes after the run"; fi
if cmp -s "$WS/test_calc.py" "$MINI_SOURCE_DIR/demo/calc/test_calc.py"; then pass "demo: the tests were not changed"
else fail "demo: the tests were not changed"; fi

finish

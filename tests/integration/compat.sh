#!/bin/bash
# Drop-in compatibility of `mini` with mini-swe-agent 2.4: its configs,
# its CLI flags, its `mini-extra config`.  The expected values come from
# running mini-swe-agent 2.4.6 (and python-dotenv, Jinja2, pydantic under
# it); they are written here, so the test needs no copy of it.
#
#  1. Every config that ships with mini-swe-agent 2.4 loads and a
#     deterministic run submits: default, mini, mini_textbased and, found
#     under benchmarks/ by name, swebench, swebench_backticks, swebench_xml,
#     swebench (+) swebench_modal, programbench.  The files are written
#     here with the same keys and value shapes as the real ones (not their
#     text: that is mini-swe-agent's), in a built-in config directory of
#     the test's own ($MINI_CONFIG_DIR).
#  2. Keys of environments mini does not have (docker's interpreter,
#     container_timeout, executable, run_args, pull_timeout, modal's...)
#     with --sandbox off: one warning line each, naming the key; the run
#     goes on.  A container class (docker) never runs on this machine:
#     without an image it is refused, with one no registry has it stops
#     at the pull (tests/integration/docker_class.sh runs one).
#  3. Floats render as Python prints them (3.0, 1e-05, 1e+16).
#  4. --agent-class: mini-swe-agent's names and class paths; others refused.
#  5. `mini config set|unset|edit`: the exact bytes python-dotenv's set_key
#     and unset_key write, mode 0600, and that -c/--config still work.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
. "$MINI_SOURCE_DIR/tests/integration/agent_lib.sh"
agent_init
MRUN_TIMEOUT=${MRUN_TIMEOUT:-60}

SUBMIT='echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT'
B=$T/builtin
mkdir -p "$B/benchmarks"

# ---- the config shapes --------------------------------------------------
# Templates use the variables the real ones use; the text is ours.
tpl_common() {
    cat <<'EOF'
  system_template: |
    You solve tasks with shell commands.
  instance_template: |
    Task: {{task}}
    Machine: {{system}} {{release}} {{version}} {{machine}}
    {% if step_limit %}At most {{ step_limit }} steps.{% endif %}
    Submit with: echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT
EOF
}
env_common() {
    cat <<'EOF'
  env:
    PAGER: cat
    MANPAGER: cat
    LESS: -R
    PIP_PROGRESS_BAR: 'off'
    TQDM_DISABLE: '1'
EOF
}
model_templates() {
    cat <<'EOF'
  observation_template: |
    {%- if output.output | length < 10000 -%}
    <returncode>{{output.returncode}}</returncode>
    {% if output.exception_info %}<exception>{{output.exception_info}}</exception>{% endif %}
    <output>{{ output.output -}}</output>
    {%- else -%}
    {%- set elided_chars = output.output | length - 10000 -%}
    <returncode>{{output.returncode}}</returncode>
    <head>{{ output.output[:5000] }}</head>
    <elided>{{ elided_chars }}</elided>
    <tail>{{ output.output[-5000:] }}</tail>
    {%- endif -%}
  format_error_template: |
    Bad format: {{error}} ({{actions|length}} actions{% if finish_reason %}, {{finish_reason}}{% endif %}).
EOF
}
{
    echo "agent:"; tpl_common; echo "  step_limit: 0"; echo "  cost_limit: 0."
    echo "environment:"; env_common
    echo "model:"; model_templates; echo "  model_kwargs:"; echo "    drop_params: true"
} >"$B/default.yaml"
for n in mini mini_textbased; do
    {
        echo "agent:"; tpl_common; echo "  step_limit: 0"; echo "  cost_limit: 3."; echo "  mode: confirm"
        echo "environment:"; env_common
        echo "model:"; model_templates; echo "  model_kwargs:"; echo "    drop_params: true"
    } >"$B/$n.yaml"
done
{
    echo "agent:"; echo "  wall_time_limit_seconds: 21600"; tpl_common; echo "  step_limit: 1000"; echo "  cost_limit: 0"
    echo "environment:"
    echo "  cwd: /workspace"; echo "  timeout: 180"; echo "  container_timeout: 7h"
    echo "  environment_class: docker"; echo "  executable: docker"
    echo "  run_args: [--rm, --network, none, --cpus, '20', --memory, 60g, --user, agent, --cap-drop, SYS_PTRACE]"
    env_common
    echo "model:"; model_templates
} >"$B/benchmarks/programbench.yaml"
swebench_like() {   # $1: extra env lines, $2: extra model lines
    echo "agent:"; tpl_common; echo "  step_limit: 250"; echo "  cost_limit: 3."
    echo "environment:"; echo "  cwd: /testbed"; echo "  timeout: 60"; echo "  interpreter: [bash, -c]"
    env_common; printf '%s' "$1"; echo "  environment_class: docker"
    echo "model:"; model_templates; printf '%s' "$2"
}
swebench_like "    BASH_ENV: /root/.bashrc
" "  model_name: anthropic/claude-sonnet-4-5-20250929
  model_kwargs:
    drop_params: true
    parallel_tool_calls: true
" >"$B/benchmarks/swebench.yaml"
swebench_like "" "  model_name: anthropic/claude-sonnet-4-5-20250929
  model_kwargs:
    drop_params: true
" >"$B/benchmarks/swebench_backticks.yaml"
swebench_like "" "  action_regex: <mswea_bash_command>(.*?)</mswea_bash_command>
  model_name: minimax/minimax-m2
  model_class: openrouter
" >"$B/benchmarks/swebench_xml.yaml"
{
    echo "environment:"; echo "  environment_class: swerex_modal"; echo "  cwd: /testbed"; echo "  timeout: 60"
    echo "  interpreter: [bash, -c]"; env_common
    echo "  startup_timeout: 600.0"; echo "  runtime_timeout: 1800.0"; echo "  deployment_timeout: 1800.0"
    echo "  install_pipx: true"; echo "  modal_sandbox_kwargs:"
    echo "model:"; echo "  model_name: gpt-5-mini"; echo "  model_class: portkey"; echo "  provider: '@openai'"
    echo "  model_kwargs:"; echo "    drop_params: true"
} >"$B/benchmarks/swebench_modal.yaml"

MENV=(MINI_CONFIG_DIR="$B" MINI_IMAGE_STORE="$T/store")
fenced() { json_strs "$(block 'echo hello > out.txt')" "$(block "$SUBMIT")"; }
xml() { json_strs "THOUGHT: x
<mswea_bash_command>echo hello > out.txt</mswea_bash_command>" "<mswea_bash_command>$SUBMIT</mswea_bash_command>"; }

# submitted NAME: the last run submitted, wrote its file, saved a trajectory.
submitted() {
    if [[ $RC == 0 ]] && [[ -f $TRAJ ]] && python3 - "$TRAJ" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
assert t["info"]["exit_status"] == "Submitted", t["info"]
PY
    then pass "$1"; else fail "$1" "rc $RC: $(tail -n 5 <<<"$ERR")"; fi
}
# warned_once NAME KEY...: stderr names each key in exactly one warning line.
warned_once() {
    local name=$1 k bad=()
    shift
    for k in "$@"; do
        [[ $(grep -c "^mini: warning: $k: " <<<"$ERR") == 1 ]] || bad+=("$k")
    done
    if [[ ${#bad[@]} == 0 ]]; then pass "$name"; else fail "$name" "not warned once: ${bad[*]}; stderr: $ERR"; fi
}

N=0
runcfg() {   # runcfg OUTPUTS SANDBOX SPEC...
    local outs=$1 sbx=$2
    shift 2
    N=$((N + 1))
    WS=$T/ws.$N
    mkws "$WS"
    TRAJ=$T/traj.$N.json
    local specs=() s
    for s in "$@"; do specs+=(-c "$s"); done
    MRUN_CWD=$WS mrun -y -t "make out.txt" --sandbox "$sbx" --workspace "$WS" -o "$TRAJ" "${specs[@]}" \
        --model-class deterministic -c "model.outputs=$outs"
}

# ==== 1, 2: every config, --sandbox off ==================================
log "# -- the configs of mini-swe-agent 2.4, --sandbox off"
for c in default mini mini_textbased swebench swebench_backticks programbench; do
    runcfg "$(fenced)" off "$c"
    submitted "$c: loads, a deterministic run submits (--sandbox off)"
done
runcfg "$(xml)" off swebench_xml
submitted "swebench_xml: its action_regex is used, the run submits"
runcfg "$(fenced)" off swebench.yaml swebench_modal.yaml
submitted "swebench + swebench_modal (.yaml names): the run submits"
warned_once "swebench_modal: one warning for each modal key" environment.startup_timeout \
    environment.runtime_timeout environment.deployment_timeout environment.install_pipx \
    environment.modal_sandbox_kwargs environment.interpreter model.provider

runcfg "$(fenced)" off swebench
warned_once "swebench: interpreter warned once, the class not (--sandbox chose it)" environment.interpreter
if [[ $ERR != *environment_class* ]]; then pass "swebench --sandbox off: no warning about the class"
else fail "swebench --sandbox off: no warning about the class" "$ERR"; fi
if [[ -d /testbed ]]; then
    log "# /testbed exists here: its warning is not checked"
else
    warned_once "swebench: the container's cwd /testbed is dropped with a warning" environment.cwd
fi

# programbench without --sandbox: environment_class docker, which has no
# image here: refused before anything runs, never run on this machine.
N=$((N + 1)); WS=$T/ws.$N; mkws "$WS"; TRAJ=$T/traj.$N.json
MRUN_CWD=$WS mrun -y -t "make out.txt" -o "$TRAJ" -c programbench --model-class deterministic \
    -c "model.outputs=$(fenced)" -c environment.pull_timeout=120
if [[ $RC == 2 ]] && grep -q '^mini: environment_class docker needs an image' <<<"$ERR" &&
    [[ ! -e $WS/out.txt && ! -e $TRAJ ]]
then pass "programbench (docker, no image): refused (exit 2), nothing ran"
else fail "programbench (docker, no image): refused (exit 2), nothing ran" "rc $RC: $ERR"; fi
if [[ $(grep -c '^mini: warning: environment: container_timeout, executable, run_args, pull_timeout: ignored' <<<"$ERR") == 1 &&
    $(grep -c 'warning: environment\.' <<<"$ERR") == 0 ]]
then pass "programbench: docker's keys in one note line"
else fail "programbench: docker's keys in one note line" "$ERR"; fi
# With an image no registry has (every request goes to a closed port):
# the pull fails, the run stops before any command.
N=$((N + 1)); WS=$T/ws.$N; mkws "$WS"; TRAJ=$T/traj.$N.json
MRUN_CWD=$WS mrun -y -t "make out.txt" -o "$TRAJ" -c programbench --model-class deterministic \
    -c "model.outputs=$(fenced)" -c environment.image=python:3.11
if [[ $RC != 0 ]] && grep -q '^mini: image python:3.11: not in the image store, and pulling it failed: ' <<<"$ERR" &&
    [[ ! -e $WS/out.txt && ! -e $TRAJ ]]
then pass "docker with an image no registry has: the pull fails, nothing ran"
else fail "docker with an image no registry has: the pull fails, nothing ran" "rc $RC: $ERR"; fi

# An unknown key elsewhere is still an error with a suggestion.
runcfg "$(fenced)" off swebench environment.timout=5
if [[ $RC == 2 && $ERR == *"environment.timout: unknown key (did you mean environment.timeout?)"* ]]; then
    pass "unknown keys still fail with 'did you mean'"
else fail "unknown keys still fail with 'did you mean'" "rc $RC: $ERR"; fi
runcfg "$(fenced)" off no_such_bench
if [[ $RC == 2 && $ERR == *"$B/benchmarks/no_such_bench.yaml"* ]]; then
    pass "a missing name lists benchmarks/ among the places tried"
else fail "a missing name lists benchmarks/ among the places tried" "rc $RC: $ERR"; fi

# ==== 1 under the sandbox ================================================
log "# -- --sandbox strict"
for c in mini swebench; do
    runcfg "$(fenced)" strict "$c"
    submitted "$c: a deterministic run submits under --sandbox strict"
done

# ==== 3. floats ==========================================================
log "# -- floats render as Python prints them"
cat >"$T/floats.yaml" <<'EOF'
agent:
  system_template: s
  instance_template: "cl={{cost_limit}} sl={{step_limit}} t={{model_kwargs.temperature}} s={{model_kwargs.small}} b={{model_kwargs.big}} i={{model_kwargs.i}} j={{model_kwargs.j}} k={{model_kwargs.k}}"
  step_limit: 250.0
  cost_limit: 3
model:
  model_kwargs:
    temperature: 0.0
    small: 1.0e-5
    big: 1.0e+16
    i: 7
EOF
runcfg "$(fenced)" off "$T/floats.yaml" model.model_kwargs.j=2.50 "model.model_kwargs.k=[1, 0.5]"
want='cl=3.0 sl=250 t=0.0 s=1e-05 b=1e+16 i=7 j=2.5 k=[1, 0.5]'
got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["messages"][1]["content"])' "$TRAJ" 2>&1)
if [[ $got == "$want" ]]; then pass "floats from YAML, -c and pydantic's float fields render as Python's"
else fail "floats from YAML, -c and pydantic's float fields render as Python's" "got '$got', want '$want'"; fi
N=$((N + 1)); WS=$T/ws.$N; mkws "$WS"; TRAJ=$T/traj.$N.json
MRUN_CWD=$WS mrun -y -t x -l 2 -o "$TRAJ" --sandbox off -c "$T/floats.yaml" -c model.model_kwargs.j=1 \
    -c model.model_kwargs.k=1 --model-class deterministic -c "model.outputs=$(fenced)"
got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["messages"][1]["content"])' "$TRAJ" 2>&1)
if [[ $got == "cl=2.0 "* && $got == *" j=1 k=1" ]]; then pass "-l 2 is the float 2.0 (typer's float)"
else fail "-l 2 is the float 2.0 (typer's float)" "got '$got'"; fi

# ==== 4. --agent-class ===================================================
log "# -- --agent-class"
for a in default minisweagent.agents.default.DefaultAgent; do
    N=$((N + 1)); WS=$T/ws.$N; mkws "$WS"; TRAJ=$T/traj.$N.json
    MRUN_CWD=$WS mrun -t x -o "$TRAJ" --sandbox off -c mini --agent-class "$a" --model-class deterministic \
        -c "model.outputs=$(fenced)"
    submitted "--agent-class $a: runs without asking (no -y, no terminal)"
done
N=$((N + 1)); WS=$T/ws.$N; mkws "$WS"; TRAJ=$T/traj.$N.json
MRUN_CWD=$WS mrun -y -t x -o "$TRAJ" --sandbox off -c mini --model-class deterministic \
    --agent-class minisweagent.agents.interactive.InteractiveAgent -c "model.outputs=$(fenced)"
submitted "--agent-class minisweagent.agents.interactive.InteractiveAgent -y: submits"
MRUN_CWD=$WS mrun -t x --agent-class interactive --sandbox off -c mini --model-class deterministic \
    -c "model.outputs=$(fenced)"
if [[ $RC == 2 && $ERR == *"-y"* ]]; then pass "--agent-class interactive without a terminal: asks for -y"
else fail "--agent-class interactive without a terminal: asks for -y" "rc $RC: $ERR"; fi
MRUN_CWD=$WS mrun -y -t x --agent-class my.agents.Fancy --sandbox off -c mini --model-class deterministic \
    -c "model.outputs=$(fenced)"
if [[ $RC == 2 && $ERR == *'agent.agent_class: "my.agents.Fancy" is not supported (supported: interactive, default)'* ]]
then pass "--agent-class with another class: exit 2, the supported ones listed"
else fail "--agent-class with another class: exit 2, the supported ones listed" "rc $RC: $ERR"; fi

# ==== 5. mini config =====================================================
log "# -- mini config set|unset|edit"
G=$T/gcfg2
MENV=(MINI_CONFIG_DIR="$B" MSWEA_GLOBAL_CONFIG_DIR="$G")
envfile() { python3 -c 'import sys; sys.stdout.write(repr(open(sys.argv[1], newline="").read()))' "$G/.env"; }
# expect_env NAME WANT_REPR: the file's content (Python repr) and mode.
expect_env() {
    local got mode
    got=$(envfile 2>&1)
    mode=$(stat -c %a "$G/.env" 2>/dev/null)
    if [[ $RC == 0 && $got == "$2" && $mode == 600 ]]; then pass "$1"
    else fail "$1" "rc $RC, mode $mode, got $got, want $2; $ERR"; fi
}
mrun config set MSWEA_MODEL_NAME openai/gpt-test
expect_env "set on a new file (directory created): KEY='value'" "\"MSWEA_MODEL_NAME='openai/gpt-test'\\n\""
mrun config set OPENAI_API_KEY "it's a key"
expect_env "set appends; a quote is written \\'" \
    "\"MSWEA_MODEL_NAME='openai/gpt-test'\\nOPENAI_API_KEY='it\\\\'s a key'\\n\""
mrun config set MSWEA_MODEL_NAME "x y"
expect_env "set replaces in place" "\"MSWEA_MODEL_NAME='x y'\\nOPENAI_API_KEY='it\\\\'s a key'\\n\""
mrun config unset OPENAI_API_KEY
expect_env "unset removes the line" "\"MSWEA_MODEL_NAME='x y'\\n\""
# Files as people write them: comments, export, CRLF, multi-line values,
# repeated keys, lines that do not parse, no final newline.
printf '# c\nexport A = '"'"'q'"'"' # cmt\r\nB="m\nl"\n  \n' >"$G/.env"
mrun config set B 2
mrun config unset A
expect_env "comments and blank lines kept, CRLF read as LF, quoted multi-line value replaced" "\"# c\\nB='2'\\n  \\n\""
printf 'A=1\nA=2\nbad line here\n=x\nC\n' >"$G/.env"
mrun config set A 3
expect_env "every binding of a repeated key replaced, unparsable lines kept" "\"A='3'\\nA='3'\\nbad line here\\n=x\\nC\\n\""
printf 'A=1' >"$G/.env"
mrun config set B v
expect_env "no final newline: one is added before the new line" "\"A=1\\nB='v'\\n\""
printf 'A=1\nA=2\nC\n\n\n' >"$G/.env"
mrun config unset A
mrun config unset C
expect_env "unset: all bindings of the key, a bare NAME too" "'\\n\\n'"
mrun config unset Z
if [[ $RC == 0 && $ERR == *"key Z not removed"*"doesn't exist"* ]]; then pass "unset of a missing key: a warning, exit 0"
else fail "unset of a missing key: a warning, exit 0" "rc $RC: $ERR"; fi
rm -f "$G/.env"
mrun config unset Z
if [[ $RC == 0 && ! -e $G/.env && $ERR == *"doesn't exist"* ]]; then pass "unset without a file: a warning, nothing created"
else fail "unset without a file: a warning, nothing created" "rc $RC: $ERR"; fi
# The file is read by mini: the model name set with `mini config set`.
mrun config set MSWEA_MODEL_NAME openai/from-dotenv
N=$((N + 1)); WS=$T/ws.$N; mkws "$WS"; TRAJ=$T/traj.$N.json
MRUN_CWD=$WS mrun -y -t x -o "$TRAJ" --sandbox off --config mini -c agent.instance_template='{{model_name}}' \
    --model-class deterministic -c "model.outputs=$(fenced)"
if [[ $RC == 0 ]] && grep -q "openai/from-dotenv" "$TRAJ" 2>/dev/null; then
    pass "mini reads what mini config set wrote (--config still a flag)"
else fail "mini reads what mini config set wrote (--config still a flag)" "rc $RC: $ERR"; fi
printf '#!/bin/sh\necho "$@" > "%s/edited"\n' "$T" >"$T/editor"
chmod +x "$T/editor"
MENV+=(EDITOR="$T/editor")
mrun config edit
if [[ $RC == 0 && $(cat "$T/edited" 2>/dev/null) == "$G/.env" ]]; then pass "edit runs \$EDITOR with the file"
else fail "edit runs \$EDITOR with the file" "rc $RC: $ERR"; fi
mrun config
if [[ $RC == 2 && $ERR == *"mini config set KEY VALUE"* ]]; then pass "mini config alone: usage, exit 2"
else fail "mini config alone: usage, exit 2" "rc $RC: $ERR"; fi
mrun config set ONLYKEY
if [[ $RC == 2 ]]; then pass "mini config set KEY without a value: exit 2"
else fail "mini config set KEY without a value: exit 2" "rc $RC"; fi
mrun -c config -y -t x --sandbox off
if [[ $RC == 2 && $ERR == *'config "config" not found'* ]]; then pass "-c config is a config name, not the subcommand"
else fail "-c config is a config name, not the subcommand" "rc $RC: $ERR"; fi

finish

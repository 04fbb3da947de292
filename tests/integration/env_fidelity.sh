#!/bin/bash
# What the environment gives the model, compared with mini-swe-agent 2.4.6's
# LocalEnvironment (the expected values below are what the real one
# returns; see docs/models.md): universal newlines ("\r\n" and a lone "\r"
# become "\n"), /bin/sh's own messages, -N for a shell killed by signal N,
# and the timeout message quoting the whole command.  Under --sandbox off
# (the local environment) and --sandbox strict (the result shape must be
# the same).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
. "$MINI_SOURCE_DIR/tests/integration/agent_lib.sh"
agent_init

LONG="echo hi; sleep 5 # $(printf 'x%.0s' $(seq 200))"
CMDS=(
    "printf 'a\\r\\nb\\rc\\n\\r'"
    "nosuchcmd"
    "kill -9 \$\$"
    "kill -TERM \$\$"
    "$LONG"
    "printf '\\377x'"
    "echo out; exit 3"
    "printf 'a\\0b\\300\\200'"
)
# One step per command, then the submission: deterministic whole messages.
outputs=$(python3 - "${CMDS[@]}" <<'PY'
import json, sys
msgs = [{"role": "assistant", "content": "step", "extra": {"actions": [{"command": c}], "cost": 0.0}}
        for c in sys.argv[1:] + ["echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]]
print(json.dumps(msgs))
PY
)

for mode in off strict; do
    WS=$T/ws.$mode
    mkws "$WS"
    TRAJ=$T/traj.$mode.json
    log "# -- environment output, --sandbox $mode"
    mrun -y --exit-immediately -c mini --model-class deterministic --sandbox "$mode" --workspace "$WS" -t task \
        -c environment.timeout=1 -c "model.outputs=$outputs" -o "$TRAJ"
    if [[ $RC == 0 ]]; then pass "$mode: the run exits 0"; else fail "$mode: the run exits 0" "status $RC: $ERR"; fi
    jcheck "$mode: outputs, return codes and messages as mini-swe-agent's local environment" LONG="$LONG" MODE=$mode <<'PY'
import os
t = load_traj()
obs = [m for m in t["messages"] if m["role"] in ("user", "tool") and "raw_output" in m.get("extra", {})]
long = os.environ["LONG"]
want = [
    ("a\nb\nc\n\n", 0, ""),
    ("/bin/sh: 1: nosuchcmd: not found\n", 127, ""),
    ("", -9, ""),
    ("", -15, ""),
    ("hi\n", -1, f"An error occurred while executing the command: Command '{long}' timed out after 1 seconds"),
    ("\ufffdx", 0, ""),
    ("out\n", 3, ""),
    # A NUL byte is kept (json.dumps writes "a\u0000b", the template sees
    # it); the bytes C0 80 are invalid UTF-8.  The sandbox's wire protocol
    # sends a NUL as U+FFFD (docs/protocol.md).
    ("a\x00b\ufffd\ufffd" if os.environ["MODE"] == "off" else "a\ufffdb\ufffd\ufffd", 0, ""),
]
expect_eq(len(obs), len(want), "observations")
for m, (out, rc, info) in zip(obs, want):
    x = m["extra"]
    expect_eq((x["raw_output"], x["returncode"], x["exception_info"]), (out, rc, info), "observation")
if os.environ["MODE"] == "off":
    expect_eq("<output>\na\x00b\ufffd\ufffd</output>" in obs[7]["content"], True, "NUL in the rendered observation")
    with open(os.environ["TRAJ"], encoding="utf-8") as f:
        raw = f.read()
    expect_eq(raw.count('"a\\u0000b\\ufffd\\ufffd"'), 1, "raw_output as json.dumps writes it")
x = obs[4]["extra"]
expect_eq((x["exception_type"], x["exception"]), ("TimeoutExpired", f"Command '{long}' timed out after 1 seconds"),
          "timeout extra")
PY
done

# A working directory that cannot be entered: Popen's OSError, as the real
# LocalEnvironment reports it (the sandbox has its own rules for cwd).
scenario_cwd() {
    local dir=$1 errno=$2 text=$3 type=$4
    WS=$T/ws.cwd.$errno
    mkws "$WS"
    TRAJ=$T/traj.cwd.$errno.json
    mrun -y --exit-immediately -c mini --model-class deterministic --sandbox off --workspace "$WS" -t task \
        -c agent.step_limit=1 -c "environment.cwd=$dir" \
        -c 'model.outputs=[{"role": "assistant", "content": "s", "extra": {"actions": [{"command": "echo hi"}]}}]' \
        -o "$TRAJ"
    jcheck "off: cwd $dir: $type, as Popen says it" DIR="$dir" ERRNO="$errno" TEXT="$text" TYPE="$type" <<'PY'
import os
t = load_traj()
obs = [m for m in t["messages"] if "raw_output" in m.get("extra", {})]
expect_eq(len(obs), 1, "observations")
x = obs[0]["extra"]
what = f"[Errno {os.environ['ERRNO']}] {os.environ['TEXT']}: '{os.environ['DIR']}'"
expect_eq((x["raw_output"], x["returncode"], x["exception_info"], x["exception_type"], x["exception"]),
          ("", -1, "An error occurred while executing the command: " + what, os.environ["TYPE"], what), "result")
PY
}
scenario_cwd "$T/no-such-dir" 2 "No such file or directory" FileNotFoundError
: >"$T/a-file"
scenario_cwd "$T/a-file" 20 "Not a directory" NotADirectoryError

finish

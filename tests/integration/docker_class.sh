#!/bin/bash
# environment_class docker (mini-swe-agent's SWE-bench configs): the
# commands run in mini's sandbox rooted in the config's image, never on
# this machine.  An image made offline (tests/image/mkimage.py testbed: a
# /testbed repository whose test fails) is imported into a store of the
# test's; a scripted model fixes the test and submits the diff.  Checked:
#   - the commands ran in the image (its /etc/os-release), in cwd /testbed,
#     with environment.env, forward_env (env wins on a clash) and the
#     interpreter (sh -c: $0 is "sh"); the timeout applies;
#   - writes to the image's root last for the session, the store's copy of
#     the image is never written, the private workspace is removed;
#   - nothing ran on the host (a host path written by a command is absent);
#   - docker's own keys (run_args, pull_timeout) get one note line;
#   - an image the store lacks and no registry has: non-zero exit with the
#     reason, no model request, nothing run, no trajectory;
#   - environment_class docker without any image: refused (exit 2).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
. "$MINI_SOURCE_DIR/tests/integration/agent_lib.sh"
agent_init
[[ -x /bin/busybox ]] || skip_all "busybox-static is not installed"
MKIMAGE=$MINI_SOURCE_DIR/tests/image/mkimage.py
export MINI_IMAGE_STORE=$T/store

python3 "$MKIMAGE" testbed "$T/tb-oci" inst-1
"$MINI_BIN/mini-sandbox" image import -q "$T/tb-oci" --name testbed:1 >/dev/null </dev/null ||
    { fail "import the test bed image"; finish; }
ROOTFS=$("$MINI_BIN/mini-sandbox" image inspect --json testbed:1 |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["rootfs"])')

# The config: outside the directory mini runs in (not a workspace's file).
mkdir -p "$T/cfg"
cat >"$T/cfg/docker.yaml" <<'EOF'
environment:
  environment_class: docker
  image: testbed:1
  cwd: /testbed
  timeout: 3
  interpreter: [sh, -c]
  env:
    MARK_VAR: from-config
  forward_env: [FWD_VAR, MARK_VAR]
  run_args: [--rm, --network, none]
  pull_timeout: 120
EOF
HOSTMARK=$T/hostmark
cleanup_path "$HOSTMARK"
OUTS=$(json_strs \
    "$(block 'cat /etc/os-release; pwd; echo "zero=$0 var=$MARK_VAR fwd=$FWD_VAR"; sh test.sh')" \
    "$(block "cp calc.sh /calc.sh.orig && sed -i 's/- \$2/+ \$2/' calc.sh && sh test.sh; echo ran >$HOSTMARK; test -e $T || echo no-host-dir")" \
    "$(block 'sleep 10; echo not reached')" \
    "$(block 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; diff -u /calc.sh.orig calc.sh || true')")
TRAJ=$T/traj.json
MENV=(MINI_IMAGE_STORE="$T/store" FWD_VAR=forwarded MARK_VAR=from-host)
MRUN_CWD=$WS mrun -y --exit-immediately -t "fix the test" -o "$TRAJ" -c mini -c "$T/cfg/docker.yaml" \
    --model-class deterministic -c "model.outputs=$OUTS" -c agent.cost_limit=0
if [[ $RC == 0 ]]; then pass "a deterministic run in the image submits"
else fail "a deterministic run in the image submits" "rc $RC: $ERR"; fi
jcheck "the commands ran in the image, in /testbed, with env, forward_env and the interpreter" <<'PY'
t = load_traj()
assert t["info"]["exit_status"] == "Submitted", t["info"]
obs = [m["content"] for m in t["messages"] if m["role"] == "user"][1:]
first = obs[0]
for want in ("ID=mini-testbed", "\n/testbed\n", "zero=sh var=from-config fwd=forwarded", "FAIL: add 2 3 gave -1"):
    assert want in first, (want, first)
assert "PASS" in obs[1] and "no-host-dir" in obs[1], obs[1]
assert "timed out after 3 seconds" in obs[2] and "\nnot reached" not in obs[2], obs[2]
sub = t["info"]["submission"]
assert "-add() { echo $(($1 - $2)); }" in sub and "+add() { echo $(($1 + $2)); }" in sub, sub
env = t["info"]["config"]["environment"]
assert env["environment_class"] == "docker" and env["image"] == "testbed:1", env
assert env["interpreter"] == ["sh", "-c"] and "run_args" not in env, env
PY
if [[ ! -e $HOSTMARK ]]; then pass "nothing ran on the host (its marker is absent)"
else fail "nothing ran on the host (its marker is absent)" "$(cat "$HOSTMARK")"; fi
if grep -q -- '- \$2' "$ROOTFS/testbed/calc.sh" && [[ ! -e $ROOTFS/calc.sh.orig ]]; then
    pass "the store's image is never written (the session had its own root)"
else fail "the store's image is never written (the session had its own root)"; fi
PWS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["info"]["config"]["environment"]["workspace"])' "$TRAJ")
if [[ $PWS == */mini-ws-* && ! -e $PWS ]]; then pass "the private workspace ($PWS) is gone"
else fail "the private workspace ($PWS) is gone"; fi
n=$(grep -c 'ignored' <<<"$ERR" || true)
if [[ $n == 1 ]] && grep -q '^mini: warning: environment: run_args, pull_timeout: ignored' <<<"$ERR"; then
    pass "run_args and pull_timeout: one note line"
else fail "run_args and pull_timeout: one note line" "$ERR"; fi

# --image NAME keeps the docker class (its cwd, its interpreter).
TRAJ=$T/traj2.json
OUTS2=$(json_strs "$(block 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; cat INSTANCE; echo "$0"')")
MENV=(MINI_IMAGE_STORE="$T/store")
MRUN_CWD=$WS mrun -y --exit-immediately -t x -o "$TRAJ" -c mini \
    -c environment.environment_class=docker -c environment.cwd=/testbed --image testbed:1 \
    --model-class deterministic -c "model.outputs=$OUTS2"
jcheck "--image with environment_class docker: the image, cwd /testbed, bash -lc by default" <<'PY'
t = load_traj()
env = t["info"]["config"]["environment"]
assert env["environment_class"] == "docker" and env["interpreter"] == ["bash", "-lc"], env
# busybox has no bash: the interpreter could not start, and the model is told so
obs = [m["content"] for m in t["messages"] if m["role"] == "user"][1]
assert "bash" in obs, obs
PY

# ==== an image no store has and no registry serves =======================
mock_start "$(json_strs "$(block "echo ran >$HOSTMARK")")"
openai_env MINI_IMAGE_STORE="$T/store" MSWEA_COST_TRACKING=ignore_errors
TRAJ=$T/traj3.json
MRUN_CWD=$WS mrun -y --exit-immediately -t x -o "$TRAJ" -c mini -c "$T/cfg/docker.yaml" -m openai/gpt-test \
    -c environment.image=127.0.0.1:9/none/testbed:latest
if [[ $RC != 0 ]]; then pass "a missing image: non-zero exit"; else fail "a missing image: non-zero exit" "$ERR"; fi
if grep -q '^mini: image 127.0.0.1:9/none/testbed:latest: not in the image store, and pulling it failed: ' <<<"$ERR"
then pass "a missing image: the reason is said"; else fail "a missing image: the reason is said" "$ERR"; fi
if [[ $(n_requests) == 0 ]]; then pass "a missing image: no model request"
else fail "a missing image: no model request" "$(n_requests) requests"; fi
if [[ ! -e $HOSTMARK && ! -e $TRAJ ]]; then pass "a missing image: nothing ran, no trajectory"
else fail "a missing image: nothing ran, no trajectory"; fi
mock_stop

# ==== --pull (environment.pull) ==========================================
# never: the store is asked, nothing is pulled; always: pulled before the
# run even when stored (no registry here: it fails); a wrong word: exit 2.
MENV=(MINI_IMAGE_STORE="$T/store")
MRUN_CWD=$WS mrun -y -t x -o "$T/traj5.json" -c mini -c "$T/cfg/docker.yaml" --model-class deterministic \
    -c "model.outputs=$OUTS2" -c environment.image=127.0.0.1:9/none/testbed:latest --pull never
if [[ $RC != 0 && $ERR != *pulling* && $ERR == *"no such image"* ]]; then pass "--pull never: no pull, the store's refusal"
else fail "--pull never: no pull, the store's refusal" "rc $RC: $ERR"; fi
MRUN_CWD=$WS mrun -y -t x -o "$T/traj6.json" -c mini -c "$T/cfg/docker.yaml" --model-class deterministic \
    -c "model.outputs=$OUTS2" --pull always
if [[ $RC != 0 ]] && grep -q "^mini: image .*: pulling it failed: " <<<"$ERR" && [[ ! -e $T/traj6.json ]]; then
    pass "--pull always: pulled before the run though stored (and no registry: it stops)"
else fail "--pull always: pulled before the run though stored (and no registry: it stops)" "rc $RC: $ERR"; fi
MRUN_CWD=$WS mrun -y -t x -o "$T/traj7.json" -c mini -c "$T/cfg/docker.yaml" --model-class deterministic \
    -c "model.outputs=$OUTS2" --pull sometimes
if [[ $RC == 2 && $ERR == *environment.pull* ]]; then pass "--pull sometimes: refused (exit 2)"
else fail "--pull sometimes: refused (exit 2)" "rc $RC: $ERR"; fi

# ==== docker without an image ============================================
MENV=(MINI_IMAGE_STORE="$T/store")
MRUN_CWD=$WS mrun -y -t x -o "$T/traj4.json" -c mini \
    -c environment.environment_class=docker --model-class deterministic -c "model.outputs=$OUTS2"
if [[ $RC == 2 ]] && grep -q '^mini: environment_class docker needs an image' <<<"$ERR" && [[ ! -e $T/traj4.json ]]
then pass "docker without an image: refused (exit 2)"; else fail "docker without an image: refused (exit 2)" "rc $RC: $ERR"; fi

finish

#!/bin/bash
# A SWE-bench-like run end to end, offline: `mini batch --swebench` over a
# JSON Lines file of instances (instance_id, problem_statement, image_name
# or none), mini-swe-agent's swebench config shape (environment_class
# docker, cwd /testbed), each instance's image pulled from a loopback
# docker-registry (skopeo pushes the test bed images of tests/image/
# mkimage.py there), a scripted model that fixes the test and submits the
# diff.  Checked:
#   - an instance without image_name gets mini-swe-agent's name
#     (docker.io/swebench/sweb.eval.x86_64.ID with __ as _1776_:latest),
#     pulled through MINI_REGISTRY_MIRRORS from the loopback registry; one
#     with image_name gets that image;
#   - each ran in its own image (its /testbed/INSTANCE), and preds.json
#     has both, model_patch the diff, as the SWE-bench harness reads it;
#   - an instance whose image no registry has ends with EnvironmentError,
#     an empty patch, no model call; the batch goes on.
# Root only (as tests/image/pull.sh).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
. "$MINI_SOURCE_DIR/tests/integration/agent_lib.sh"
agent_init
is_root || skip_all "needs root (as tests/image/pull.sh: the registry and the daemon's sandboxes)"
have docker-registry || skip_all "docker-registry is not installed (scripts/install-deps.sh --test)"
have skopeo || skip_all "skopeo is not installed (scripts/install-deps.sh --test)"
have curl || skip_all "curl is not installed"
[[ -x /bin/busybox ]] || skip_all "busybox-static is not installed"
. "$MINI_SOURCE_DIR/tests/image/image_lib.sh"   # MKIMAGE, free_port, start_registry
PORT=$(free_port)
REG=127.0.0.1:$PORT
start_registry reg "$PORT"

# Instance 1 names no image: mini-swe-agent's name for it, served by the
# loopback registry as docker.io's mirror.  Instance 2 names its image.
ID1=demo__calc-1
ID2=demo__calc-2
ID3=demo__gone-3
push() { skopeo copy -q --dest-tls-verify=false "oci:$1" "docker://$2" >"$T/skopeo.log" 2>&1; }
python3 "$MKIMAGE" testbed "$T/img1" "$ID1"
python3 "$MKIMAGE" testbed "$T/img2" "$ID2"
push "$T/img1:latest" "$REG/swebench/sweb.eval.x86_64.demo_1776_calc-1:latest" &&
    push "$T/img2:latest" "$REG/other/calc:v2" || { cat "$T/skopeo.log"; log "FAIL: skopeo push"; exit 1; }
python3 - "$T/instances.jsonl" "$ID1" "$ID2" "$ID3" "$REG" <<'PY'
import json, sys
path, id1, id2, id3, reg = sys.argv[1:]
with open(path, "w") as f:
    for rec in ({"instance_id": id1, "problem_statement": "add() subtracts", "repo": "demo/calc"},
                {"instance_id": id2, "problem_statement": "add() subtracts", "repo": "demo/calc",
                 "image_name": f"{reg}/other/calc:v2"},
                {"instance_id": id3, "problem_statement": "gone", "repo": "demo/gone",
                 "image_name": f"{reg}/nobody/has:this"}):
        f.write(json.dumps(rec) + "\n")
PY

# mini-swe-agent's swebench.yaml shape, with busybox's sh for bash.
mkdir -p "$T/cfg"
cat >"$T/cfg/swebench.yaml" <<'EOF'
environment:
  cwd: /testbed
  timeout: 20
  interpreter: [sh, -c]
  env:
    PAGER: cat
  environment_class: docker
EOF
PATCH_CMD='cd / && mkdir -p a b && cp /calc.sh.orig a/calc.sh && cp /testbed/calc.sh b/calc.sh && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && diff -u a/calc.sh b/calc.sh; true'
OUTS=$(json_strs "$(block 'cat INSTANCE; sh test.sh')" \
    "$(block "cp calc.sh /calc.sh.orig && sed -i 's/- \$2/+ \$2/' calc.sh && sh test.sh")" \
    "$(block "$PATCH_CMD")")
MENV=(MINI_IMAGE_STORE="$T/store" MINI_REGISTRY_MIRRORS="docker.io=$REG")
OUTD=$T/out
RC=0
timeout -k 5 240 env -i "${MINI_BASE_ENV[@]}" "${MENV[@]}" "$MINI_BIN/mini" batch --swebench "$T/instances.jsonl" \
    -c mini -c "$T/cfg/swebench.yaml" --model-class deterministic -c "model.outputs=$OUTS" \
    -c agent.cost_limit=0 -w 2 -o "$OUTD" >"$T/batch.out" 2>"$T/batch.err" </dev/null || RC=$?
ERR=$(cat "$T/batch.err")
if [[ $RC == 0 ]]; then pass "mini batch --swebench ran every instance"
else fail "mini batch --swebench ran every instance" "rc $RC: $ERR"; fi

if python3 - "$OUTD" "$ID1" "$ID2" "$ID3" >"$T/check.out" 2>&1 <<'PY'
import json, os, sys
out, id1, id2, id3 = sys.argv[1:]
preds = json.load(open(os.path.join(out, "preds.json")))
assert set(preds) == {id1, id2, id3}, preds
want = ("--- a/calc.sh\n+++ b/calc.sh\n@@ -1 +1 @@\n"
        "-add() { echo $(($1 - $2)); }\n+add() { echo $(($1 + $2)); }\n")
for i in (id1, id2):
    p = preds[i]
    assert set(p) == {"model_name_or_path", "instance_id", "model_patch"} and p["instance_id"] == i, p
    assert p["model_patch"] == want, (i, p["model_patch"])
    r = json.load(open(os.path.join(out, i, "result.json")))
    assert r["exit_status"] == "Submitted", r
    t = json.load(open(os.path.join(out, i, i + ".traj.json")))
    first = [m["content"] for m in t["messages"] if m["role"] == "user"][1]
    assert i in first and "FAIL: add 2 3 gave -1" in first, first
assert t["info"]["config"]["environment"]["environment_class"] == "docker"
r = json.load(open(os.path.join(out, id3, "result.json")))
assert r["exit_status"] == "EnvironmentError" and r["steps"] == 0, r
assert "pulling it failed" in r["error"], r
assert preds[id3]["model_patch"] == "", preds[id3]
PY
then pass "preds.json: each instance's diff from its own image; the missing image an EnvironmentError"
else fail "preds.json: each instance's diff from its own image; the missing image an EnvironmentError" \
    "$(cat "$T/check.out") $ERR"; fi
ls=$(MINI_IMAGE_STORE=$T/store "$MINI_BIN/mini-sandbox" image ls 2>&1)
if [[ $ls == *"docker.io/swebench/sweb.eval.x86_64.demo_1776_calc-1:latest"* && $ls == *"$REG/other/calc:v2"* ]]; then
    pass "both images were pulled into the store, under their names"
else fail "both images were pulled into the store, under their names" "$ls"; fi

finish

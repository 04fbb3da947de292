#!/bin/bash
# An imported image as the sandbox's root (run --image, open.image):
# the image's files, whiteouts applied, its Env; nothing of the host's
# root; the root read-only under strict and writable (per session) under
# standard; the workspace writable; the image's files readable as in the
# image (a 0600 file of its root); as root and rootless.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
. "$(dirname "${BASH_SOURCE[0]}")/image_lib.sh"
have python3 || skip_all "python3 is not installed"
[[ -x /bin/busybox ]] || skip_all "busybox-static is not installed"

python3 "$MKIMAGE" oci "$T/bb-oci"
img import -q "$T/bb-oci" >/dev/null || { log "FAIL: import"; exit 1; }
start_daemon

for SBX_PROFILE in strict standard; do
    p=$SBX_PROFILE
    expect_eq "$p: the image's file" "hello from layer 2" sbx --image bb-oci:test -- cat /etc/motd
    expect_eq "$p: whiteouts applied" "b" sbx --image bb-oci:test -- 'ls /opq; test ! -e /etc/removed.txt'
    expect_eq "$p: the image's Env" "from-image" sbx --image bb-oci:test -- 'echo $IMAGE_VAR'
    expect_eq "$p: its root-owned 0600 file is readable" "root only" sbx --image bb-oci:test -- cat /etc/secret
    expect_eq "$p: nothing of the host's root" "none" sbx --image bb-oci:test -- \
        'test -e /etc/debian_version -o -e /usr/bin/python3 -o -e /lib || echo none'
    expect_eq "$p: the workspace is writable" "ok" sbx --image bb-oci:test -- "echo ok >$WS/f-$p; cat $WS/f-$p"
    expect_eq "$p: /tmp is a writable tmpfs" "ok" sbx --image bb-oci:test -- 'echo ok >/tmp/x; cat /tmp/x'
    expect_eq "$p: no capabilities" "CapEff:	0000000000000000" sbx --image bb-oci:test -- 'grep CapEff /proc/self/status'
done
# Root: a mount made on the host under the workspace after an image
# session's pool was prepared shows in its next command, and once
# unmounted is gone from the one after (each sandbox clones the
# workspace's mounts when it is prepared; the pool follows them).
if ((EUID == 0)); then
    run timeout 60 python3 - "$MINI_SOURCE_DIR/tests/integration" "$SOCK" "$WS" "$RUN_TAG" <<'PY'
import os, subprocess, sys
sys.path.insert(0, sys.argv[1])
import pool_client
sock, ws, tag = sys.argv[2:5]
c = pool_client.connect(sock)
s = c.reply(c.request("open", workspace=ws, profile="strict", image="bb-oci:test"))["session"]
run = lambda cmd: c.wait_exit(c.exec(s, cmd), timeout=30)["output"]
for _ in range(3):
    run("true")
m = f"{ws}/mnt-{tag}"
os.mkdir(m)
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=755", f"mini-img-{tag}", m], check=True)
try:
    with open(f"{m}/marker", "w") as f:
        f.write("IN\n")
    os.chmod(f"{m}/marker", 0o644)
    seen = run(f"cat {m}/marker 2>&1 || true")
finally:
    subprocess.run(["umount", m], check=True)
gone = run(f"cat {m}/marker 2>/dev/null || echo gone")
os.rmdir(m)
c.reply(c.request("close", session=s))
print(repr(seen), repr(gone))
sys.exit(0 if (seen, gone) == ("IN\n", "gone\n") else 1)
PY
    if [[ $RC == 0 ]]; then pass "an image session follows mounts made and removed under the workspace"
    else fail "an image session follows mounts made and removed under the workspace" "$OUT $ERR"; fi
fi
SBX_PROFILE=strict
expect_eq "the image's WorkingDir is the default cwd" "/work" sbx --image bb-oci:test -- pwd
expect_eq "--cwd still wins" "$WS" sbx --image bb-oci:test --cwd "$WS" -- pwd
expect_eq "--cwd may name a directory of the image" "/etc" sbx --image bb-oci:test --cwd /etc -- pwd
expect_rc "--cwd to a directory the image lacks is refused" 125 sbx --image bb-oci:test --cwd /nonexistent -- pwd
expect_rc "strict: the root is read-only" 1 sbx --image bb-oci:test -- 'touch /etc/new'
SBX_PROFILE=standard
expect_eq "standard: the root is writable" "ok" sbx --image bb-oci:test -- 'echo ok >/etc/new; cat /etc/new'
R=$(image_root bb-oci:test)
check "the store's image is never written" test ! -e "$R/etc/new"
# The agent: mini --image NAME (environment.image), a deterministic model.
outs=$(python3 -c 'import json, sys
b = lambda c: "THOUGHT: step.\n\n```mswea_bash_command\n%s\n```" % c
print(json.dumps([b("cat /etc/motd > " + sys.argv[1] + "/motd.txt"), b("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")]))' "$WS")
run bounded env -i PATH=/usr/bin:/bin HOME="$T" MINI_IMAGE_STORE="$STORE" "$MINI_BIN/mini" -y -t x -c mini \
    --model-class deterministic -c "model.outputs=$outs" --image bb-oci:test --workspace "$WS" \
    -c "environment.socket=$SOCK" -o "$T/traj.json"
check "mini --image: the command ran in the image" grep -q "hello from layer 2" "$WS/motd.txt"

# A private daemon (no --socket, none listening) finds the same store.
mkdir -m 0700 "$T/xdg"
run bounded env XDG_RUNTIME_DIR="$T/xdg" "$MINI_BIN/mini-sandbox" run --workspace "$WS" --image bb-oci:test \
    -- cat /etc/motd </dev/null
if [[ $RC == 0 && $OUT == "hello from layer 2" ]]; then pass "a private daemon finds the image"
else fail "a private daemon finds the image"; fi

# A profile's "image" key.
printf '{"name": "imaged", "image": "bb-oci:test"}\n' >"$T/imaged.json"
SBX_PROFILE=$T/imaged.json
expect_eq "a profile's image key" "hello from layer 2" sbx -- cat /etc/motd
SBX_PROFILE=strict

# An image in use by a session cannot be removed under it.
sbx --image bb-oci:test -- "sleep $(uniq_sleep 3)" >/dev/null 2>&1 & bg=$!
wait_until 10 has_process "sleep $(uniq_sleep 3)" || true
run img rm bb-oci:test
if [[ $RC == 1 ]] && contains "$ERR" "root of a sandbox session"; then pass "rm of an image a session uses is refused"
else fail "rm of an image a session uses is refused"; fi
wait $bg || true
# The daemon closes the session when it sees the client gone: soon after.
wait_until 10 bash -c '"$0" image rm bb-oci:test >/dev/null 2>&1' "$MINI_BIN/mini-sandbox" || true
check "once the session is closed, rm works" test -z "$(ls "$STORE/images")"
img import -q "$T/bb-oci" >/dev/null

# --pull=never: no registry asked (the default, missing, would pull it).
expect_rc "an unknown image is refused (125)" 125 sbx --pull=never --image nosuch -- true
contains "$ERR" "no such image" && contains "$ERR" nosuch && pass "the refusal names the image" ||
    fail "the refusal names the image"

finish

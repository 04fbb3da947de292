#!/bin/bash
# The parked session (sandbox/daemon/park.c; session.c, session_park and
# session_claim): a one-shot client's session (mini-sandbox run: one
# command with exec.last) is kept when it closes, with one sandbox prepared after the
# command, and the next open of the same workspace and profile takes it
# over.  These checks attack the reuse from where a user stands and look
# at the host:
#
#  1. a run leaves exactly one prepared sandbox behind, for a while
#  2. the next run takes it (daemon log), and it is fresh: nothing the
#     first command left (a /tmp file, a background process) is there, and
#     no process of the first command is alive on the host
#  3. another workspace does not take it: the file lands in its own
#     directory, not the parked one's
#  4. the same path, replaced by a new directory: the command writes into
#     the new one (host side), the old one gets nothing
#  5. a profile that differs only in what a prepared sandbox bakes in
#     (hostname, /tmp size) is not served by the parked sandbox
#  6. root: the workspace changed hands (chown) between runs: what the
#     command creates is the new owner's on the host
#  7. it expires: no sandbox of ours is left after the park time, and
#     SIGTERM while one is parked leaves none either
#  8. an open that takes it and is abandoned (its client gone while the
#     workspace is measured) leaves no sandbox, and the daemon serves on
#  9. a hidden path (a secrets directory) made after the parked sandbox
#     was prepared is hidden in the next run all the same
# 10. the same for a session's own pool: a sandbox prepared before a
#     hidden path appeared is not used
#
# Prints "N passed, N failed".
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
MINI_TEST_LOG_LEVEL=debug
mini_test_init "$@"
skip_if_caches_off "it checks the parked session"

TAG=$RUN_TAG
SBX_PROFILE=strict
start_daemon

n_sandboxes() { our_sandbox_pids | wc -l; }
n_taken() { grep -c "takes session" "$DAEMON_LOG" || true; }
one_parked() { [[ $(n_sandboxes) == 1 ]]; }

# 1. one prepared sandbox stays after a one-shot run
expect_rc "[1] a run in the workspace" 0 sbx -- true
if wait_until 10 one_parked; then
    pass "[1] the run leaves one prepared sandbox behind"
else
    fail "[1] the run leaves one prepared sandbox behind" "sandboxes of our daemon: $(n_sandboxes)"
fi

# 2. the next run takes it, and finds nothing of the first command
S=$(uniq_sleep 53)
expect_rc "[2] a command leaves a file in /tmp and a process behind" 0 \
    sbx -- "echo planted > /tmp/mark-$TAG; (setsid sleep $S >/dev/null 2>&1 &); true"
wait_until 10 one_parked || true
before=$(n_taken)
expect_eq "[2] the next command finds neither in its sandbox" "clean" \
    sbx -- "if [ -e /tmp/mark-$TAG ] || ps -eo args | grep -q '^sleep $S'; then echo dirty; else echo clean; fi"
after=$(n_taken)
RC=0 OUT= ERR=
if (( after > before )); then
    pass "[2] that command ran in the parked sandbox (daemon log: takes session)"
else
    fail "[2] that command ran in the parked sandbox (daemon log: takes session)" "takes before: $before, after: $after"
fi
check "[2] no process of the first command is alive on the host" no_process "sleep $S"

# 3. another workspace: its own sandbox, its own directory
W2=$T/ws2
mkws "$W2"
wait_until 10 one_parked || true
before=$(n_taken)
expect_rc "[3] a run in another workspace" 0 \
    bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$W2" --profile strict -- "echo two > f3"
RC=0 OUT= ERR=
if [[ -f $W2/f3 && ! -e $WS/f3 && $(n_taken) == "$before" ]]; then
    pass "[3] its file is in its own workspace, and the parked sandbox was not taken"
else
    fail "[3] its file is in its own workspace, and the parked sandbox was not taken" \
        "$W2/f3: $(ls -l "$W2/f3" 2>&1); $WS/f3: $(ls -l "$WS/f3" 2>&1); takes $before -> $(n_taken)"
fi

# 4. the same path, a new directory
W4=$T/ws4
mkws "$W4"
run4() { bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$W4" --profile strict -- "$1"; }
expect_rc "[4] a run in a workspace" 0 run4 "echo old > before"
wait_until 10 one_parked || true
mv "$W4" "$W4.old"
mkws "$W4"
expect_rc "[4] a run after the directory was replaced by a new one at the same path" 0 run4 "echo new > after"
RC=0 OUT= ERR=
if [[ -f $W4/after && ! -e $W4.old/after ]]; then
    pass "[4] the command wrote into the new directory, not the replaced one"
else
    fail "[4] the command wrote into the new directory, not the replaced one" \
        "new: $(ls -A "$W4" 2>&1 | tr '\n' ' '); old: $(ls -A "$W4.old" 2>&1 | tr '\n' ' ')"
fi

# 5. a profile that only differs in what preparing bakes in
PROF5=$T/strict-other.json
python3 - "$MINI_SOURCE_DIR/profiles/strict.json" "$PROF5" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["hostname"] = "parked-not"
for t in p["filesystem"]["tmpfs"]:
    if t["path"] == "/tmp":
        t["size_mb"] = 1
json.dump(p, open(sys.argv[2], "w"))
PY
expect_rc "[5] a run with strict" 0 sbx -- true
wait_until 10 one_parked || true
expect_eq "[5] the same workspace with a profile whose hostname differs gets that hostname" "parked-not" \
    bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$WS" --profile "$PROF5" -- hostname
wait_until 10 one_parked || true
expect_eq "[5] ... and its 1 MB /tmp" "full" \
    bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$WS" --profile "$PROF5" -- \
    "head -c 2000000 /dev/zero > /tmp/big 2>/dev/null && echo room || echo full"
expect_eq "[5] strict again gets strict's hostname" "mini-sandbox" sbx -- hostname

# 6. root: the workspace changes hands between runs
if is_root; then
    W6=$T/ws6
    mkws "$W6"
    run6() { bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$W6" --profile strict -- "$1"; }
    expect_rc "[6] a run in a workspace of uid 65534" 0 run6 "echo a > a"
    wait_until 10 one_parked || true
    chown 4242:4242 "$W6"
    expect_rc "[6] a run after chown to uid 4242" 0 run6 "echo b > b"
    RC=0 OUT= ERR=
    if [[ $(stat -c %u "$W6/b" 2>/dev/null) == 4242 && $(stat -c %u "$W6/a" 2>/dev/null) == 65534 ]]; then
        pass "[6] the file made after the chown is the new owner's on the host"
    else
        fail "[6] the file made after the chown is the new owner's on the host" "$(ls -ln "$W6" 2>&1)"
    fi
else
    skip "[6] the workspace changes hands" "root only"
fi

# 8. a workspace large enough that open measures it in a process of its
#    own (disk_mb): an open that takes the parked sandbox and whose client
#    goes before the measure ends leaves no sandbox, and the daemon serves on
W8=$T/ws8
mkws "$W8"
# Enough files that the measure takes longer than the client's goodbye.
python3 -c 'import os, sys
for i in range(30000): open(os.path.join(sys.argv[1], "f%d" % i), "w").close()' "$W8"
is_root && chown -R "${MINI_TEST_WS_UID:-65534}:${MINI_TEST_WS_GID:-65534}" "$W8"
run8() { bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$W8" --profile strict -- "$1"; }
expect_rc "[8] a run in a workspace of 30000 files" 0 run8 true
wait_until 10 one_parked || true
before=$(n_taken)
expect_rc "[8] a client opens it and goes at once" 0 timeout 20 python3 - "$MINI_SOURCE_DIR/tests/integration" "$SOCK" "$W8" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import pool_client
c = pool_client.connect(sys.argv[2])
c.request("open", workspace=sys.argv[3], profile="strict")
c.close()
PY
RC=0 OUT= ERR=
if (( $(n_taken) > before )); then
    pass "[8] that open took the parked sandbox"
else
    skip "[8] that open took the parked sandbox" "the daemon had not parked one yet"
fi
no_sandbox_left() { [[ $(n_sandboxes) == 0 ]]; }
if wait_until 5 no_sandbox_left; then
    pass "[8] no sandbox is left after that client went"
else
    fail "[8] no sandbox is left after that client went" "sandboxes of our daemon: $(n_sandboxes)"
fi
expect_eq "[8] the daemon still runs commands there" "ok" run8 "echo ok"

# 9, 10. a hidden path that appears after a sandbox was prepared: the
#    parked sandbox (9) and a session's pooled one (10) are not used, the
#    command gets one that hides it (a secrets directory, as mini's own)
# Outside /tmp, which strict covers with a tmpfs of its own.
PUB=$(mktemp -d /var/tmp/mini-park.XXXXXX)
cleanup_path "$PUB"
chmod 755 "$PUB"
echo "visible" >"$PUB/canary"
chmod 644 "$PUB/canary"
PROF9=$T/strict-pub.json
python3 - "$MINI_SOURCE_DIR/profiles/strict.json" "$PROF9" "$PUB" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["filesystem"]["binds"].append(sys.argv[3])
p["filesystem"]["hide"].append(sys.argv[3] + "/secrets")
json.dump(p, open(sys.argv[2], "w"))
PY
read_secret="cat $PUB/secrets/.env 2>/dev/null || echo hidden"
run9() { bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$WS" --profile "$PROF9" -- "$1"; }
expect_eq "[9] the sandbox sees the directory the secrets will be made in" "visible" run9 "cat $PUB/canary"
expect_eq "[9] a run, before the secrets directory exists" "hidden" run9 "$read_secret"
wait_until 10 one_parked || true
mkdir "$PUB/secrets"
echo "TOKEN-$TAG" >"$PUB/secrets/.env"
chmod -R a+rX "$PUB/secrets"
expect_eq "[9] the next run does not see the secrets directory made since" "hidden" run9 "$read_secret"
expect_eq "[9] ... nor the one after" "hidden" run9 "$read_secret"
rm -rf "$PUB/secrets"
wait_until 10 one_parked || true
expect_rc "[10] one session: a command, its pool refilled, then a secrets directory appears" 0 \
    timeout 60 python3 - "$MINI_SOURCE_DIR/tests/integration" "$SOCK" "$WS" "$PROF9" "$PUB" "$TAG" <<'PY'
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import pool_client
sock, ws, prof, pub, tag = sys.argv[2:7]
c = pool_client.connect(sock)
s = c.reply(c.request("open", workspace=ws, profile_data=json.load(open(prof))))["session"]
cmd = f"cat {pub}/secrets/.env 2>/dev/null || echo hidden"
r = c.wait_exit(c.exec(s, cmd), timeout=30)
assert r["output"] == "hidden\n", r
time.sleep(1.0)  # the pool's replacement is prepared
os.mkdir(f"{pub}/secrets")
with open(f"{pub}/secrets/.env", "w") as f:
    f.write(f"TOKEN-{tag}\n")
os.chmod(f"{pub}/secrets", 0o755)
os.chmod(f"{pub}/secrets/.env", 0o644)
r = c.wait_exit(c.exec(s, cmd), timeout=30)
print(r["output"], end="")
assert r["output"] == "hidden\n", f"the pooled sandbox showed the secret: {r['output']!r}"
PY

# 7. it expires, and SIGTERM leaves nothing
expect_rc "[7] a run" 0 sbx -- true
RC=0 OUT= ERR=
if wait_until 10 one_parked && wait_until 20 no_sandbox_left; then
    pass "[7] the parked sandbox is gone after the park time"
else
    fail "[7] the parked sandbox is gone after the park time" "sandboxes of our daemon: $(n_sandboxes)"
fi
expect_rc "[7] a run" 0 sbx -- true
wait_until 10 one_parked || true
rc=0
stop_daemon || rc=$?
RC=0 OUT= ERR=
left=$(pgrep -f '^mini-sandbox-init( |$)' | while read -r p; do
    ppid=$(awk '/^PPid:/ { print $2 }' "/proc/$p/status" 2>/dev/null); [[ $ppid != 1 ]] || echo "$p"; done || true)
if [[ $rc == 0 && -z $left ]]; then
    pass "[7] SIGTERM with a sandbox parked: the daemon exits 0 and leaves no sandbox"
else
    fail "[7] SIGTERM with a sandbox parked: the daemon exits 0 and leaves no sandbox" "status $rc; orphaned inits: $left"
fi

finish

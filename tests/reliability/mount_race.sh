#!/bin/bash
# A mount made and removed on the host under a bound directory while a
# pooled sandbox copies the mount table (sandbox/daemon/mounts.c): the
# copy holds the mount, the table before and after does not, so the hash
# of the binds' mounts is the same on both sides and only the change
# count shows it.  No command may run in that sandbox.
#
# The fault: mini-sandboxd runs with LD_PRELOAD=mini-test-slow-unshare.so
# (slow_unshare.c), whose unshare stops before and after the copy of one
# setup child, while the host mounts a tmpfs with a marker under the bind
# before the copy and unmounts it after.
#
#  1. the sandbox is READY when the command comes: it is discarded there
#  2. the command comes before it is READY: it is discarded when taken
#
# Root only (the host's mounts).  Prints "N passed, N failed".
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
have python3 || skip_all "python3 is missing"
[[ $(id -u) == 0 ]] || skip_all "mounting on the host needs root"

PRELOAD=$MINI_BUILD_DIR/tests/reliability/mini-test-slow-unshare.so
if [[ ! -r $PRELOAD ]]; then
    fail "the fault library is built" "$PRELOAD is missing"
    finish
fi
# The bound directory, outside the test's 0700 temp dir so that the
# session's uid reaches it.
PUB=$(mktemp -d /var/tmp/mini-mount-race.XXXXXX)
cleanup_path "$PUB"
mkdir "$PUB/mnt"
chmod -R 755 "$PUB"
cleanup_cmd "umount $PUB/mnt 2>/dev/null"
PROF=$T/strict-bind.json
python3 - "$MINI_SOURCE_DIR/profiles/strict.json" "$PROF" "$PUB" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["filesystem"]["binds"].append(sys.argv[3])
json.dump(p, open(sys.argv[2], "w"))
PY
SYNC=$T/sync
mkdir "$SYNC"
chmod 777 "$SYNC"
DAEMON_WRAPPER="env LD_PRELOAD=$PRELOAD MINI_TEST_SLOW_UNSHARE=$SYNC" start_daemon

# The host's side: around the slowed copy, a tmpfs with a marker is
# mounted, then unmounted.
host_side() {
    local i
    for i in $(seq 2000); do [[ -e $SYNC/before ]] && break; sleep 0.01; done
    [[ -e $SYNC/before ]] || { echo "no sandbox reached the slowed unshare" >"$SYNC/error"; return; }
    mount -t tmpfs -o size=1m,mode=755 "mini-race-$RUN_TAG" "$PUB/mnt" &&
        echo "MOUNTED-$RUN_TAG" >"$PUB/mnt/marker" && chmod 644 "$PUB/mnt/marker"
    touch "$SYNC/go1"
    for i in $(seq 2000); do [[ -e $SYNC/after ]] && break; sleep 0.01; done
    umount "$PUB/mnt"
    touch "$SYNC/go2"
}

OUT_FILE=$T/race.out
for mode in ready early; do
    rm -f "$SYNC"/*
    touch "$SYNC/on"
    host_side &
    hp=$!
    RC=0
    timeout 120 python3 - "$MINI_SOURCE_DIR/tests/integration" "$SOCK" "$WS" "$PROF" "$PUB" "$SYNC" "$mode" \
        >"$OUT_FILE" 2>&1 <<'PY' || RC=$?
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import pool_client
sock, ws, prof, pub, sync, mode = sys.argv[2:8]
c = pool_client.connect(sock)
# The open prepares the session's first sandbox: the slowed one.
s = c.reply(c.request("open", workspace=ws, profile_data=json.load(open(prof))))["session"]
deadline = time.time() + 60
while not os.path.exists(f"{sync}/go2") and time.time() < deadline:
    time.sleep(0.01)
if mode == "ready":
    time.sleep(1.0)  # its READY is in
r = c.wait_exit(c.exec(s, f"cat {pub}/mnt/marker 2>/dev/null || echo gone"), timeout=30)
print("output:", r["output"].strip())
c.reply(c.request("close", session=s))
PY
    wait "$hp"
    out=$(sed -n 's/^output: //p' "$OUT_FILE")
    if [[ -e $SYNC/error ]]; then
        fail "$mode: the race was set up" "$(cat "$SYNC/error")"
    elif [[ $RC == 0 && -e $SYNC/after && $out == gone ]]; then
        pass "$mode: a sandbox that copied a mount since removed is not used"
    else
        fail "$mode: a sandbox that copied a mount since removed is not used" \
            "python exit $RC, output: $out; $(tail -5 "$OUT_FILE")"
    fi
done
finish

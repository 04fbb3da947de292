#!/bin/bash
# Workspace disk use: a profile's limits.disk_mb
# bounds what a session adds to its workspace (and its overlay, for an
# overlay root).  The kernel offers no quota here, so the daemon watches
# (sandbox/daemon/disk.c): these checks write past the limit from inside
# the sandbox in the ways that could slip past a watch (many small files,
# hard links, a directory the daemon may not read, the overlay) and check
# on the host what was left, that a later command can clean up, that what
# the workspace held before the session is not counted, and that other
# writers on the same filesystem do not get a session killed.  It also
# checks that `check` and `opened` say how it is enforced.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
have python3 || skip_all "python3 is missing"
expect_eq_val() { if [[ $2 == "$3" ]]; then pass "$1"; else fail "$1" "got: $2"; fi; }

run bash -c "cd '$WS' && '$MINI_BIN/mini-sandbox' check --json"
q=$(printf '%s' "$OUT" | python3 -c 'import json,sys; q=json.load(sys.stdin)["machine"]["workspace_quota"]; print(q["enforced"], q["mechanism"], "kernel project quotas" in q["kernel"])' 2>&1)
expect_eq_val "check --json: machine.workspace_quota: enforced by the watch, the kernel's quota described" "$q" "True watch True"
run bash -c "cd '$WS' && '$MINI_BIN/mini-sandbox' check"
if contains "$OUT" "workspace quota (cwd)" && contains "$OUT" "disk_mb"; then pass "check: the table has the workspace quota row"
else fail "check: the table has the workspace quota row" "$OUT"; fi

# As root, a second workspace of 100,000 files, on a tmpfs so that making
# it is fast whatever the disk is doing: measuring it at open takes a while
# (section 7).  Rootless, that section is skipped: no tmpfs to mount.
BIG=
if is_root; then
    BIG=$T/bigws
    mkdir "$BIG" && mount -t tmpfs -o size=256m,mode=0755 mini-disk "$BIG" && cleanup_cmd "umount '$BIG'"
fi

# Host-side helpers: what the workspace holds (in MiB), written as its owner.
du_mib() { du -s --block-size=1M "$1" | cut -f1; }
as_owner() { if is_root; then setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; else "$@"; fi; }

# What the workspace held before: 30 MiB, over the 20 MiB the sessions
# below may add, which must not count.
as_owner mkdir "$WS/before"
as_owner dd if=/dev/urandom of="$WS/before/old" bs=1M count=30 status=none
if [[ -n $BIG ]]; then
    chown 65534:65534 "$BIG"
    as_owner /usr/bin/python3 -c 'import os,sys
for d in range(100):
    os.mkdir(f"{sys.argv[1]}/d{d}")
    for f in range(1000): open(f"{sys.argv[1]}/d{d}/f{f}", "w").close()' "$BIG"
fi

start_daemon
run bounded env PYTHONPATH="$MINI_SOURCE_DIR/tests/integration" python3 -B - "$SOCK" "$WS" "$T" "$BIG" "$DAEMON_PID" <<'EOF'
import os, sys, subprocess, threading, time, select, signal
from pool_client import connect
sock, ws, tmp, big, dpid = sys.argv[1:6]
c = connect(sock)
def say(name, ok, detail=""):
    print(("ok " if ok else "NOT ok ") + name + ("" if ok else f"  [{detail}]"))

def opened(profile, disk_mb=None):
    ov = {"limits": {"disk_mb": disk_mb}} if disk_mb is not None else None
    r = c.reply(c.request("open", workspace=ws, profile=profile, overrides=ov))
    return r["session"], r["isolation"]["workspace_quota"]

def du(path):
    out = subprocess.run(["du", "-s", "--block-size=1M", path], capture_output=True, text=True).stdout
    return int(out.split()[0])

def disk_note(r):
    return any(n.startswith("disk:") for n in r["notes"])

# opened says how it is enforced: strict by the watch; permissive sets no disk_mb.
s, q = opened("strict")
say("opened strict: workspace_quota enforced by the watch, limit 1024 MiB",
    q["enforced"] is True and q.get("mechanism") == "watch" and q["limit_mb"] == 1024, q)
c.close_session(s)
s, q = opened("permissive")
say("opened permissive: not enforced, and why", q["enforced"] is False and "disk_mb" in q["reason"], q)
c.close_session(s)

s, q = opened("strict", 20)
say("override disk_mb 20 tightens strict", q["enforced"] is True and q["limit_mb"] == 20, q)

# 1. Many small files, far past the limit: killed with limit disk.
r = c.run(s, "mkdir -p many && for i in $(seq 1 300); do head -c 1048576 /dev/zero > many/f$i || exit 3; done; echo finished", timeout=60)
n = len(os.listdir(os.path.join(ws, "many")))
say("300 x 1 MiB: killed with limit disk, 137, and a note", r["limit"] == "disk" and r["returncode"] == 137 and disk_note(r), r)
say("300 x 1 MiB: stopped well before the end (host: %d files)" % n, "finished" not in r["output"] and n < 200, n)

# 2. Over the limit, a command that writes is killed (or told), one that
# cleans up brings the session back, and then writing works again.
r = c.run(s, "head -c 2097152 /dev/zero > more; sleep 0.3; echo wrote", timeout=30)
say("over the limit: the next writer is killed or told", r["limit"] == "disk" or disk_note(r), r)
r = c.run(s, "rm -rf many more; echo cleaned", timeout=30)
say("rm brings the session back under: exit 0", r["returncode"] == 0 and "cleaned" in r["output"], r)
r = c.run(s, "head -c 10485760 /dev/zero > ten; sleep 0.3; echo ok", timeout=30)
say("then 10 MiB (with 30 MiB there before the session) is fine, no note",
    r["returncode"] == 0 and r["limit"] is None and not disk_note(r), r)

# 3. Hard links are counted once: 8 links to the 10 MiB file add nothing.
r = c.run(s, "for i in 1 2 3 4 5 6 7 8; do ln ten link$i; done; sleep 0.3; echo linked", timeout=30)
say("hard links to one file count once", r["returncode"] == 0 and r["limit"] is None, r)

# 4. Others writing to the same filesystem do not get the session killed:
# the host writes 40 MiB beside the workspace while a quiet command runs.
def host_writer():
    with open(os.path.join(tmp, "host-fill"), "wb") as f:
        for _ in range(40):
            f.write(b"\0" * 1048576)
            f.flush()
            os.fsync(f.fileno())
xid = c.exec(s, command="sleep 1.5; echo quiet", timeout=30)
t = threading.Thread(target=host_writer)
t.start(); t.join()
r = c.wait_exit(xid, timeout=30)
os.unlink(os.path.join(tmp, "host-fill"))
say("a host writer on the same filesystem does not kill a quiet command", r["returncode"] == 0 and r["limit"] is None, r)

# 5. A directory the daemon cannot read (rootless) still counts: the watch
# fails closed.  Root reads it and counts it.
r = c.run(s, "rm -f ten link*; mkdir hide && head -c 31457280 /dev/zero > hide/big; chmod 000 hide; sleep 0.5; echo hid", timeout=30)
say("30 MiB behind a mode-000 directory: limit disk or a disk note", r["limit"] == "disk" or disk_note(r), r)
r = c.run(s, "chmod 700 hide && rm -rf hide; echo gone", timeout=30)
say("chmod + rm of it brings the session back", r["returncode"] == 0 and not disk_note(r), r)
c.close_session(s)

# 6. The overlay root (standard): what is written to /usr counts.
r = c.reply(c.request("open", workspace=ws, profile="standard", overrides={"limits": {"disk_mb": 20}}))
s = r["session"]
if not r["isolation"]["session_overlay"]:
    print("skip standard: no session overlay on this machine")
else:
    r = c.run(s, "for i in $(seq 1 60); do head -c 1048576 /dev/zero > /usr/f$i || exit 3; done; echo finished", timeout=60)
    say("60 MiB into the overlay's /usr: killed with limit disk", r["limit"] == "disk" and "finished" not in r["output"], r)
c.close_session(s)

# 7. Measuring a workspace at open happens off the daemon's loop, in a
# process of its own (sandboxd-du).  The test stops that process (SIGSTOP)
# while it measures 100,000 files, so one client's open is pending for sure;
# meanwhile another client opens, runs a command and gets its exit.
if not big:
    print("skip 7. an open over a large workspace: the tmpfs it is made on needs root to mount")
    c.close()
    sys.exit(0)
def measurers():  # pids of the daemon's measuring processes
    out = []
    for p in os.listdir("/proc"):
        try:
            st = open(f"/proc/{p}/stat").read()
        except (OSError, ValueError):
            continue
        comm, rest = st[st.index("(") + 1:st.rindex(")")], st[st.rindex(")") + 2:].split()
        if comm == "sandboxd-du" and rest[1] == dpid:
            out.append(int(p))
    return out
def catch_measurer():  # the measurer of an open just sent, stopped; None if missed
    deadline = time.time() + 10
    while time.time() < deadline:
        for pid in measurers():
            os.kill(pid, signal.SIGSTOP)
            return pid
    return None
a = connect(sock)
aid = a.request("open", workspace=big, profile="strict")
m = catch_measurer()
s = c.reply(c.request("open", workspace=ws, profile="strict"))["session"]
r = c.run(s, "echo small", timeout=30)
pending = select.select([a.sock], [], [], 0)[0] == []
if m:
    os.kill(m, signal.SIGCONT)
ra = a.reply(aid)
say("an open whose measure is stopped does not hold up another client's open and command",
    m is not None and r["returncode"] == 0 and pending and ra["isolation"]["workspace_quota"]["enforced"] is True,
    (m, r, pending))
a.close()
# A client that leaves while its open is being measured: the measure is
# stopped, the daemon serves on, nothing of it is left.
d = connect(sock)
d.request("open", workspace=big, profile="strict")
m = catch_measurer()
d.sock.close()
deadline = time.time() + 10
while m in measurers() and time.time() < deadline:
    time.sleep(0.02)
r = c.run(s, "echo still", timeout=30)
say("a client gone during its open's measure: the measuring process is killed, the daemon serves on",
    m is not None and m not in measurers() and r["returncode"] == 0, (m, measurers(), r))
c.close_session(s)
c.close()
EOF
while IFS= read -r line; do
    case $line in
    "ok "*) pass "${line#ok }" ;;
    "NOT ok "*) fail "${line#NOT ok }" ;;
    "skip "*) line=${line#skip }; skip "${line%%: *}" "${line#*: }" ;;
    esac
done <<<"$OUT"
if (( RC != 0 )); then fail "the session checks ran to the end" "$ERR"; fi
# Nothing of the sessions is left on the host but the workspace's own.
expect_eq_val "the workspace holds what it held before, and nothing else" "$(du_mib "$WS")" "$(du_mib "$WS/before")"
finish

"""Bounds on what one client can make mini-sandboxd hold.

Usage: queue_checks.py SOCKET WORKSPACE DAEMON_PID
Prints one "ok - NAME" or "not ok - NAME: why" line per check.  Raw
frames on purpose: these clients misbehave (never read, cut a frame).
"""
import json
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from rawframe import call, frame, recv_frame  # noqa: E402

SOCK, WS, DPID = sys.argv[1], sys.argv[2], int(sys.argv[3])
failed = 0


def report(name, ok, why=""):
    global failed
    print(("ok - " if ok else "not ok - ") + name + ("" if ok else ": " + why), flush=True)
    failed += not ok


def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(SOCK)
    s.settimeout(30)
    return s


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def hello(s):
    return call(s, {"op": "hello", "id": 1, "version": 1})


# ---- busy: sessions per connection ------------------------------------
s = conn()
h = hello(s)
lim = (h or {}).get("features", {}).get("limits", {})
per = lim.get("sessions_per_connection")
report("hello names the limits", isinstance(per, int) and per > 0, repr(lim))
per = per or 16
codes = []
for i in range(per + 1):
    r = call(s, {"op": "open", "id": 10 + i, "profile": "strict", "workspace": WS})
    codes.append(r.get("op") if r and r.get("op") != "error" else (r or {}).get("code"))
report("sessions over the per-connection limit get busy",
       codes[:per] == ["opened"] * per and codes[per] == "busy", repr(codes))
r = call(s, {"op": "stats", "id": 99})
report("the connection stays usable after busy", r is not None and r.get("op") == "stats", repr(r))
s.close()

# ---- a frame cut by shutdown(SHUT_WR) gets an error --------------------
s = conn()
hello(s)
body = json.dumps({"op": "stats", "id": 5}).encode()
s.sendall(struct.pack(">I", len(body) + 20) + body)
s.shutdown(socket.SHUT_WR)
r = recv_frame(s)
report("a stream ending inside a frame gets an error",
       r is not None and r.get("op") == "error" and r.get("code") == "bad_request", repr(r))
s.close()

# ---- a client that never reads -----------------------------------------
before = rss_kb(DPID)
bad = conn()
hello(bad)
r = call(bad, {"op": "open", "id": 2, "profile": "strict", "workspace": WS})
sess = (r or {}).get("session")
bad.setblocking(False)
sent = 0
deadline = time.time() + 40
cmd = "head -c 1000000 /dev/zero | tr '\\0' a"
pending = b""
while sent < 400 and time.time() < deadline:
    if not pending:
        pending = frame({"op": "exec", "id": 100 + sent, "session": sess, "command": cmd})
        sent += 1
    try:
        n = bad.send(pending)
        pending = pending[n:]
    except BlockingIOError:
        time.sleep(0.05)
time.sleep(5)
peak = max(rss_kb(DPID), 0)
grew = peak - before
report("a client that never reads does not grow the daemon past 160 MB (grew %d kB, %d requests sent)"
       % (grew, sent), grew < 160 * 1024, "grew %d kB" % grew)
good = conn()
r = hello(good)
r2 = call(good, {"op": "open", "id": 2, "profile": "strict", "workspace": WS})
ok = r2 is not None and r2.get("op") == "opened"
if ok:
    r3 = call(good, {"op": "exec", "id": 3, "session": r2["session"], "command": "echo fine"})
    ok = r3 is not None and r3.get("op") == "exit" and r3.get("output") == "fine\n"
report("another client is served meanwhile", ok, repr(r2))
good.close()
bad.close()
sys.exit(1 if failed else 0)

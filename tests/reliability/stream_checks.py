"""Back-pressure on streamed output: clients that send
streaming execs of fast printers and never read.

Usage: stream_checks.py SOCKET WORKSPACE DAEMON_PID
Prints one "ok - NAME" or "not ok - NAME: why" line per check, and
"# ..." lines with figures.  Raw frames on purpose: these clients never
read.
"""
import socket
import sys
import time
import os

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from rawframe import call, frame, recv_frame  # noqa: E402

SOCK, WS, DPID = sys.argv[1], sys.argv[2], int(sys.argv[3])
failed = 0
BAD_CLIENTS, EXECS = 2, 60          # 2 x 60 + 4 + 1: within the 128 commands a daemon runs
BIG = "yes | head -c 200M"          # 200 MB of output each, in well under a second unblocked
LATER = 4                           # commands of the client that reads late
LATER_BYTES = 20 << 20


def report(name, ok, why=""):
    global failed
    print(("ok - " if ok else "not ok - ") + name + ("" if ok else ": " + why), flush=True)
    failed += not ok


def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(SOCK)
    return s


def status_kb(key):
    with open("/proc/%d/status" % DPID) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def session(s):
    call(s, {"op": "hello", "id": 1, "version": 1})
    r = call(s, {"op": "open", "id": 2, "profile": "strict", "workspace": WS})
    return (r or {}).get("session")


def stats():
    s = conn()
    call(s, {"op": "hello", "id": 1, "version": 1})
    r = call(s, {"op": "stats", "id": 2})
    s.close()
    return r or {}


base = status_kb("VmRSS")
# Non-reading clients: all their streaming commands sent at once, then
# nothing is read.
bad = []
for k in range(BAD_CLIENTS):
    s = conn()
    sess = session(s)
    s.sendall(b"".join(frame({"op": "exec", "id": 100 + i, "session": sess, "command": BIG, "stream": True})
                       for i in range(EXECS)))
    bad.append(s)
# A client that reads late.
late = conn()
lsess = session(late)
late.sendall(b"".join(frame({"op": "exec", "id": 100 + i, "session": lsess, "stream": True,
                             "command": "yes | head -c %d" % LATER_BYTES}) for i in range(LATER)))
want = BAD_CLIENTS * EXECS + LATER
running, peak = 0, 0
deadline = time.time() + 60
while time.time() < deadline:
    running = stats().get("running", 0)
    peak = max(peak, status_kb("VmRSS"))
    if running >= want:
        break
    time.sleep(0.5)
# The commands run, blocked on their output pipes: a few seconds more,
# and none of them is done (unblocked, each would be in well under one).
for _ in range(10):
    time.sleep(0.5)
    peak = max(peak, status_kb("VmRSS"))
st = stats()
hwm = status_kb("VmHWM")
grew = max(peak, hwm) - base
print("# %d streaming commands of non-reading clients: daemon VmRSS %d kB at the start, peak %d kB, VmHWM %d kB "
      "(grew %d kB)" % (want, base, peak, hwm, grew), flush=True)
report("streamed commands of non-reading clients are all running, blocked (%d of %d)" % (st.get("running", -1), want),
       st.get("running") == want and st.get("execs_total") == want, repr(st))
# Bound: per non-reading client the 4 MiB of unread replies, and little per
# command; without back-pressure before each read, each of its commands
# adds a chunk of its own (about 640 kB, 40 MB per client).
report("the daemon's memory stays bounded (grew %d kB, at most 40 MB allowed)" % grew,
       grew < 40 * 1024, "grew %d kB" % grew)

# Another client is served meanwhile.
g = conn()
gs = session(g)
r = call(g, {"op": "exec", "id": 3, "session": gs, "command": "echo fine"})
report("another client is served meanwhile", r is not None and r.get("op") == "exit" and r.get("output") == "fine\n",
       repr(r))
g.close()

# The late reader reads: its commands finish with all their output.
got, exits = {}, {}
late.settimeout(120)
while len(exits) < LATER:
    m = recv_frame(late)
    if m is None:
        break
    if m.get("op") == "output":
        got[m["id"]] = got.get(m["id"], 0) + len(m["data"])
    elif m.get("op") in ("exit", "error"):
        exits[m["id"]] = m
ok = len(exits) == LATER and all(e.get("op") == "exit" and e.get("returncode") == 0 and
                                 e.get("output_bytes") == LATER_BYTES and got.get(i) == LATER_BYTES
                                 for i, e in exits.items())
report("once the client reads, its streamed commands finish with all their output", ok,
       repr({i: (e.get("op"), e.get("returncode"), e.get("output_bytes"), got.get(i)) for i, e in exits.items()}))
late.close()

# The non-reading clients go: their commands are killed and everything ends.
for s in bad:
    s.close()
deadline = time.time() + 60
while time.time() < deadline:
    st = stats()
    if st.get("running") == 0 and st.get("sessions") == 0 and st.get("clients") == 1:
        break
    time.sleep(0.5)
report("once the non-reading clients go, their commands end", st.get("running") == 0 and st.get("sessions") == 0,
       repr(st))
sys.exit(1 if failed else 0)

"""Connections at the daemon's limits: the open-files limit,
the connections cap, and frames that never end.

Usage: connection_checks.py MODE SOCKET WORKSPACE DAEMON_PID DAEMON_LOG
  fdlimit  the daemon runs with a small open-files limit (ulimit -n 64) and
           a connections cap above it: clients past the limit get busy,
           requests that need an fd get busy, one warning in the log
  cap      the daemon's default cap, derived from that small limit
  maxcli   the daemon runs with --max-clients 3 --frame-timeout 2
Prints one "ok - NAME" or "not ok - NAME: why" line per check, and
"# ..." lines with figures.  Raw frames on purpose: these clients
misbehave (never send, stop mid-frame).
"""
import json
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from rawframe import call, frame, recv_frame  # noqa: E402

MODE, SOCK, WS, DPID, DLOG = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
failed = 0


def report(name, ok, why=""):
    global failed
    print(("ok - " if ok else "not ok - ") + name + ("" if ok else ": " + why), flush=True)
    failed += not ok


def conn(timeout=20):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(SOCK)
    return s


def kind(r):
    """hello/opened/exit/..., or the error's code."""
    if r is None:
        return "eof"
    return r.get("code") if r.get("op") == "error" else r.get("op")


def greet(s):
    """Send hello (a refused connection may be closed already) and read
    the first frame: the hello reply, or busy; "hang" when none comes."""
    try:
        s.sendall(frame({"op": "hello", "id": 1, "version": 1}))
    except OSError:
        pass
    try:
        return recv_frame(s)
    except socket.timeout:
        return {"op": "error", "code": "hang"}
    except OSError as e:
        return {"op": "error", "code": "oserror " + str(e)}


def cpu_ticks(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def fd_warnings():
    with open(DLOG, errors="replace") as f:
        return sum("Too many open files" in line for line in f)


def take_free_fds(held):
    """Open connections until one is refused: whatever fds the daemon got
    back meanwhile (a reaped helper's pidfd, a sandbox's) are taken."""
    for _ in range(20):
        s = conn(timeout=10)
        if kind(greet(s)) != "hello":
            s.close()
            return
        held.append(s)


def fdlimit():
    c0 = conn()
    call(c0, {"op": "hello", "id": 1, "version": 1})
    r = call(c0, {"op": "open", "id": 2, "profile": "strict", "workspace": WS})
    sess = (r or {}).get("session")
    report("a session opens below the fd limit", kind(r) == "opened", repr(r))

    # 100 connections against 64 fds: each is served or told busy.
    held, counts, socks = [], {}, []
    t0, c_0 = time.time(), cpu_ticks(DPID)
    for _ in range(100):
        try:
            s = conn(timeout=10)
        except OSError as e:
            counts["connect " + str(e)] = counts.get("connect " + str(e), 0) + 1
            continue
        try:
            s.sendall(frame({"op": "hello", "id": 1, "version": 1}))
        except OSError:
            pass   # refused and closed already: its busy is there to read
        socks.append(s)
    deadline = time.time() + 30
    for s in socks:
        s.settimeout(max(0.1, deadline - time.time()))
        try:
            k = kind(recv_frame(s))
        except socket.timeout:
            k = "hang"
        except OSError as e:
            k = "oserror " + str(e)
        counts[k] = counts.get(k, 0) + 1
        if k == "hello":
            s.settimeout(20)
            held.append(s)
        else:
            s.close()
    print("# 100 connections at ulimit -n 64: %r" % counts, flush=True)
    report("connections past the fd limit get busy, none is left hanging",
           counts.get("busy", 0) > 0 and counts.get("hello", 0) + counts.get("busy", 0) == 100, repr(counts))

    # The fds are all taken: what needs one gets busy, saying why.  The
    # id-map holder made ahead after the open exits on its own and is reaped
    # when it does, which frees its pidfd: take that too.
    take_free_fds(held)
    r = call(c0, {"op": "exec", "id": 3, "session": sess, "command": "true", "cwd": WS})
    report("an exec at the fd limit gets busy (too many open files), not cwd_invalid",
           kind(r) == "busy" and "too many open files" in r.get("message", "").lower(), repr(r))
    # The failed exec may have given fds back (its prepared sandbox's), and
    # an open may need fewer than they add up to (a root daemon's id map is
    # made ahead): take whatever is free again first.
    take_free_fds(held)
    r = call(c0, {"op": "open", "id": 4, "profile": "strict", "workspace": WS})
    report("a session opened at the fd limit gets busy (too many open files), not io_error",
           kind(r) == "busy" and "too many open files" in r.get("message", "").lower(), repr(r))

    # Clients come and go at the limit: each goes, one more comes and is
    # served, and the next is refused.  The log says so once.
    turned = 0
    for i in range(20):
        if held:
            held.pop().close()
        for _ in range(2):
            s = conn(timeout=10)
            k = kind(greet(s))
            if k == "hello":
                held.append(s)
            else:
                turned += k == "busy"
                s.close()
    time.sleep(3)   # and then a moment at the limit, for the figure
    secs = time.time() - t0
    cpu = (cpu_ticks(DPID) - c_0) / os.sysconf("SC_CLK_TCK")
    warns = fd_warnings()
    print("# at the fd limit: daemon cpu %.2f s in %.1f s (%.1f%%), log %d bytes, %d out-of-fds warnings, "
          "%d more refused with busy" % (cpu, secs, 100 * cpu / secs, os.path.getsize(DLOG), warns, turned), flush=True)
    report("the daemon warns about running out of fds once, not per connection (%d warnings)" % warns,
           1 <= warns <= 2, "%d warnings in the log" % warns)

    for s in held:
        s.close()
    c0.close()
    # Everything of those connections is gone: the daemon serves again.
    ok, why = False, ""
    deadline = time.time() + 30
    while not ok and time.time() < deadline:
        s = conn()
        r = greet(s)
        if kind(r) == "hello":
            r = call(s, {"op": "open", "id": 2, "profile": "strict", "workspace": WS})
            if kind(r) == "opened":
                r = call(s, {"op": "exec", "id": 3, "session": r["session"], "command": "echo fine"})
                ok = kind(r) == "exit" and r.get("output") == "fine\n"
        why = repr(r)
        s.close()
        if not ok:
            time.sleep(0.5)
    report("sessions and commands work again once the connections go", ok, why)


def cap():
    c0 = conn()
    h = call(c0, {"op": "hello", "id": 1, "version": 1})
    n = (h or {}).get("features", {}).get("limits", {}).get("connections")
    report("the default connections cap fits the open-files limit of 64 (cap %r)" % n,
           isinstance(n, int) and 1 <= n < 64, repr(h))
    if not isinstance(n, int) or not 1 <= n < 64:
        return
    held = [c0]
    for _ in range(n - 1):
        s = conn()
        held.append(s)
        greet(s)
    s = conn()
    r = greet(s)
    report("the connection past the cap gets busy",
           kind(r) == "busy" and "connections" in r.get("message", ""), repr(r))
    s.close()
    r = call(c0, {"op": "open", "id": 2, "profile": "strict", "workspace": WS})
    report("a connection within the cap opens a session", kind(r) == "opened", repr(r))
    for s in held:
        s.close()


def maxcli():
    held = []
    for i in range(3):
        s = conn()
        held.append(s)
        greet(s)
    s = conn()
    r = greet(s)
    report("--max-clients 3: the fourth connection gets busy",
           kind(r) == "busy" and "3 connections" in r.get("message", ""), repr(r))
    s.close()
    r = call(held[0], {"op": "stats", "id": 2})
    report("--max-clients 3: the three are served", kind(r) == "stats" and r.get("clients") == 3, repr(r))
    # A frame half sent, then nothing: bad_request after --frame-timeout 2,
    # and the connection is closed.  (Waits are generous, not thresholds.)
    half = held[1]
    body = json.dumps({"op": "stats", "id": 5}).encode()
    half.sendall(struct.pack(">I", len(body)) + body[: len(body) // 2])
    half.settimeout(60)
    try:
        r = recv_frame(half)
    except socket.timeout:
        r = {"op": "none", "why": "no reply in 60 s"}
    report("a half-sent frame gets bad_request (frame incomplete) after --frame-timeout",
           kind(r) == "bad_request" and "frame incomplete after 2 s" in r.get("message", ""), repr(r))
    try:
        eof = recv_frame(half) is None
    except OSError as e:
        eof = isinstance(e, ConnectionResetError)
    report("the connection with the half-sent frame is closed", eof, "")
    # A connection quiet between frames is not a half-sent frame.
    idle = held[2]
    time.sleep(5)
    r = call(idle, {"op": "stats", "id": 6})
    report("a connection idle between frames is kept past --frame-timeout", kind(r) == "stats", repr(r))
    # A frame sent in pieces, each well within the timeout: served.
    body = json.dumps({"op": "stats", "id": 7}).encode()
    data = struct.pack(">I", len(body)) + body
    for i in range(0, len(data), 8):
        idle.sendall(data[i:i + 8])
    r = recv_frame(idle)
    report("a frame sent in pieces is served", kind(r) == "stats", repr(r))
    for s in held:
        s.close()


{"fdlimit": fdlimit, "cap": cap, "maxcli": maxcli}[MODE]()
sys.exit(1 if failed else 0)

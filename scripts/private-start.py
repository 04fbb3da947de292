#!/usr/bin/env python3
"""Where a private daemon's time goes (the one `mini-sandbox run` starts
when no daemon listens): this script plays that client on a socketpair.

    scripts/private-start.py BINDIR WORKSPACE [--runs N] [--profile P]

Each run starts BINDIR/mini-sandboxd --inherit-fd, then times, one after
another: its start to the `hello` reply, the `open`, one `exec` of
`true` with `last` to its `exit`, and the daemon's exit after the
connection closes (what `run` waits for, so that nothing is left).  It
prints the p50 of each.  Python's own fork and exec are in the first
figure.  docs/sandbox-lifecycle.md quotes it.  As root, WORKSPACE must
belong to an unprivileged user (a root daemon refuses root's)."""
import argparse
import json
import socket
import statistics
import struct
import subprocess
import time


def frame(obj):
    body = json.dumps(obj).encode()
    return struct.pack(">I", len(body)) + body


def read_frame(sock):
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            raise EOFError("the daemon closed the connection")
        head += chunk
    n = struct.unpack(">I", head)[0]
    body = b""
    while len(body) < n:
        chunk = sock.recv(n - len(body))
        if not chunk:
            raise EOFError("the daemon closed the connection mid-frame")
        body += chunk
    return json.loads(body)


def reply(sock, rid):
    while True:
        msg = read_frame(sock)
        if msg.get("op") == "error":
            raise RuntimeError(f"daemon error: {msg}")
        if msg.get("id") == rid and msg.get("op") != "output":
            return msg


def one(bindir, workspace, profile):
    ours, theirs = socket.socketpair()
    t0 = time.perf_counter()
    daemon = subprocess.Popen([bindir + "/mini-sandboxd", "--inherit-fd", str(theirs.fileno()), "--foreground"],
                              pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    theirs.close()
    try:
        ours.sendall(frame({"op": "hello", "id": 1, "version": 1, "client": "private-start.py"}))
        reply(ours, 1)
        t1 = time.perf_counter()
        ours.sendall(frame({"op": "open", "id": 2, "workspace": workspace, "profile": profile}))
        session = reply(ours, 2)["session"]
        t2 = time.perf_counter()
        ours.sendall(frame({"op": "exec", "id": 3, "session": session, "argv": ["true"], "last": True}))
        if reply(ours, 3)["returncode"] != 0:
            raise RuntimeError("true failed in the sandbox")
        t3 = time.perf_counter()
    finally:
        ours.close()
    daemon.wait()
    t4 = time.perf_counter()
    return [(b - a) * 1e3 for a, b in ((t0, t1), (t1, t2), (t2, t3), (t3, t4))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bindir")
    ap.add_argument("workspace")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--profile", default="strict")
    a = ap.parse_args()
    rows = []
    for _ in range(a.runs):
        rows.append(one(a.bindir, a.workspace, a.profile))
        time.sleep(0.01)
    names = ["start to hello", "open", "exec to exit", "daemon's exit"]
    for i, name in enumerate(names):
        print(f"{name:<16} p50 {statistics.median(r[i] for r in rows):6.2f} ms")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Where a private daemon's time goes (the one `mini-sandbox run` starts
when no daemon listens): this script plays that client on a socketpair.

    scripts/private-start.py BINDIR WORKSPACE [--runs N] [--profile P]

Each run starts BINDIR/mini-sandboxd --inherit-fd, then times, one after
another: its start to the `hello` reply, the `open`, one `exec` of
`true` with `last` to its `exit`, and the daemon's exit after the
connection closes (what `run` waits for, so that nothing is left).  It
prints the p50 of each.  Python's own fork and exec are in the first
figure, and the protocol client of tests/integration/pool_client.py in
all.  docs/performance.md quotes it.  As root, WORKSPACE must
belong to an unprivileged user (a root daemon refuses root's)."""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from pool_client import Conn  # noqa: E402


def one(bindir, workspace, profile):
    ours, theirs = socket.socketpair()
    t0 = time.perf_counter()
    daemon = subprocess.Popen([bindir + "/mini-sandboxd", "--inherit-fd", str(theirs.fileno()), "--foreground"],
                              pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    theirs.close()
    c = Conn(None, sock=ours)
    try:
        c.hello(client="private-start.py")
        t1 = time.perf_counter()
        session = c.open(workspace, profile=profile)
        t2 = time.perf_counter()
        if c.wait_exit(c.exec(session, argv=["true"], last=True))["returncode"] != 0:
            raise RuntimeError("true failed in the sandbox")
        t3 = time.perf_counter()
    finally:
        c.close()
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

#!/usr/bin/env python3
"""Compare two running mini-sandboxd daemons (two builds, say) under the
same load: blocks of commands alternate between them, so that whatever
else the machine does falls on both alike.

    scripts/sandbox-paired.py SOCK_A SOCK_B WORKSPACE [--rounds N] [--block N]

Each round runs, on each daemon in turn (the first one alternating), a
block of `true` commands back to back (each sent as soon as the previous
exit arrives), then half as many with 30 ms pauses (agent-paced).  It
prints the p50 of each kind for A and B and B/A.  Figures only, through
the protocol client of tests/integration/pool_client.py (Python: its own
time is in every figure, alike for both).  docs/performance.md
quotes it."""
import argparse
import os
import statistics
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from pool_client import connect  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sock_a")
    ap.add_argument("sock_b")
    ap.add_argument("workspace")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--block", type=int, default=20)
    a = ap.parse_args()
    if a.rounds < 1 or a.block < 2:
        sys.exit("--rounds must be at least 1 and --block at least 2")
    conns = [connect(s, timeout=30) for s in (a.sock_a, a.sock_b)]
    sessions = [c.open(a.workspace, profile="strict") for c in conns]
    for c, s in zip(conns, sessions):
        c.run(s, argv=["true"])
    res = {(i, kind): [] for i in range(2) for kind in ("back to back", "paced")}

    def one(i):
        t = time.monotonic()
        r = conns[i].run(sessions[i], argv=["true"])
        if r["returncode"] != 0:
            sys.exit(f"daemon {'AB'[i]}: true exited {r['returncode']}")
        return (time.monotonic() - t) * 1e3

    for r in range(a.rounds):
        for i in (0, 1) if r % 2 == 0 else (1, 0):
            for _ in range(a.block):
                res[(i, "back to back")].append(one(i))
            time.sleep(0.05)
            for _ in range(a.block // 2):
                time.sleep(0.03)
                res[(i, "paced")].append(one(i))
            time.sleep(0.05)
    for kind in ("back to back", "paced"):
        pa, pb = (statistics.median(res[(i, kind)]) for i in range(2))
        print(f"{kind:12} p50 A {pa:7.3f} ms  B {pb:7.3f} ms  B/A {pb / pa:5.2f}  (n={len(res[(0, kind)])} each)")
    for c, s in zip(conns, sessions):
        c.close_session(s)
        c.close()


if __name__ == "__main__":
    main()

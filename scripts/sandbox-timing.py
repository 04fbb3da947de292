#!/usr/bin/env python3
"""Summarise mini-sandboxd's per-step timers (MINI_SANDBOX_TIMING=1):
reads the daemon's log (a file or stdin) and prints, per step, the p50 and
p90 in ms over every command, and how many commands found their sandbox
ready before their request.  docs/performance.md ("Per-step timers")
explains the steps."""
import re
import statistics
import sys

STEPS = ["prepare", "cgroup", "clone", "id maps", "go", "attach", "child to ready",
         "unshare", "wait for go", "root", "confine", "init exec",
         "request to launch", "to accepted", "to status", "to exit sent"]
NUM = r"(-?[0-9.]+)"


def table(title, lines):
    vals = {k: [] for k in STEPS}
    for line in lines:
        for k in STEPS:
            m = re.search(r"(?:^|[\[( ,;:])" + re.escape(k) + " " + NUM, line)
            if m and float(m.group(1)) >= 0:
                vals[k].append(float(m.group(1)))
    print(f"\n{title}: {len(lines)} commands")
    if not lines:
        return
    print(f"{'step':<20} {'p50 ms':>8} {'p90 ms':>8}")
    for k in STEPS:
        v = sorted(vals[k])
        if v:
            p90 = v[min(len(v) - 1, int(0.9 * len(v)))]
            print(f"{k:<20} {statistics.median(v):8.3f} {p90:8.3f}")


def main():
    src = open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin
    lines = [line for line in src if "timing: exec" in line]
    if not lines:
        sys.exit("no timing lines (was the daemon run with MINI_SANDBOX_TIMING=1?)")
    table("sandbox ready before the request", [x for x in lines if "ready before the request" in x])
    table("sandbox ready after the request", [x for x in lines if "ready before the request" not in x])

main()

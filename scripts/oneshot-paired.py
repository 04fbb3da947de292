#!/usr/bin/env python3
"""Compare the one-shot `mini-sandbox run` of two builds, each starting a
private daemon of its own (no daemon listens), one call of each build in
turn, the first build alternating, so that whatever else the machine does
falls on both alike.

    scripts/oneshot-paired.py BINDIR_A BINDIR_B WORKSPACE [--runs N] [--profile P] [--pause MS] [--daemon]

Each build gets a runtime directory of its own: the probe cache is keyed
by the daemon binary, and two builds sharing one would make every call
probe again.  Each call runs `true` (through /bin/sh -c, as `run` does
with one word), from posix_spawn to its exit; a pause (default 30 ms)
before each lets the kernel finish tearing down the previous call's
namespaces.  With --daemon, each build's mini-sandboxd is started first
and every call goes to it (`run --socket`: the `run, daemon` row of
`mini-sandbox bench`) instead.  Prints p10/p50/p90/mean per build, and
the p50 of the paired ratios B/A.  As root, WORKSPACE must belong to an unprivileged user.
docs/performance.md quotes it."""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin_a")
    ap.add_argument("bin_b")
    ap.add_argument("workspace")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--profile", default="strict")
    ap.add_argument("--pause", type=float, default=30.0, help="ms before each call")
    ap.add_argument("--daemon", action="store_true", help="against a running daemon of each build")
    a = ap.parse_args()
    bins = [os.path.abspath(a.bin_a), os.path.abspath(a.bin_b)]
    dirs = [tempfile.mkdtemp(prefix="mini-oneshot-") for _ in bins]
    null = os.open(os.devnull, os.O_RDWR)
    daemons = []
    if a.daemon:
        for b, d in zip(bins, dirs):
            sock = d + "/sock"
            daemons.append(subprocess.Popen([b + "/mini-sandboxd", "--socket", sock, "--state-dir", d + "/state",
                                             "--foreground"], stderr=subprocess.DEVNULL))
            for _ in range(100):
                if os.path.exists(sock):
                    break
                time.sleep(0.1)

    def one(i):
        env = dict(os.environ, XDG_RUNTIME_DIR=dirs[i])
        argv = [bins[i] + "/mini-sandbox", "run", "--profile", a.profile, "--workspace", a.workspace, "--", "true"]
        if a.daemon:
            argv[2:2] = ["--socket", dirs[i] + "/sock"]
        t = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=[(os.POSIX_SPAWN_DUP2, null, 0),
                                                               (os.POSIX_SPAWN_DUP2, null, 1)])
        _, st = os.waitpid(pid, 0)
        ms = (time.perf_counter() - t) * 1000
        if st != 0:
            sys.exit(f"{argv[0]} run exited with status {st:#x}")
        return ms

    # The first calls probe and write each build's cache.
    for i in (0, 1):
        one(i)
        one(i)
    res = [[], []]
    ratios = []
    for r in range(a.runs):
        got = [0.0, 0.0]
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            time.sleep(a.pause / 1000)
            got[i] = one(i)
        res[0].append(got[0])
        res[1].append(got[1])
        ratios.append(got[1] / got[0])
    for name, v in zip("AB", res):
        v = sorted(v)
        print(f"{name} {bins['AB'.index(name)]}: p10 {v[len(v) // 10]:.2f}  p50 {statistics.median(v):.2f}  "
              f"p90 {v[9 * len(v) // 10]:.2f}  mean {statistics.mean(v):.2f} ms")
    print(f"B/A, p50 of the paired ratios: {statistics.median(ratios):.3f}")
    for d in daemons:
        d.terminate()
        d.wait()
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()

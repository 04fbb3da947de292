#!/usr/bin/env python3
"""Benchmark of `mini batch`: N deterministic tasks of S steps
each under the strict sandbox, for several worker counts.  Prints, per
worker count: tasks per second, the batch's own overhead per task, the
peak RSS of the batch process and of the daemon, and the peak of the
resident sets of the batch, its workers and the daemon added up (pages the
forks share counted once per process: an upper bound); never pass/fail
on time.

    batch_bench.py MINI_BIN [N] [STEPS] [WORKERS,...]

Overhead per task = (workers x wall - time in sandboxed commands - time in
the model) / tasks, where the command and model times are what each worker
measured around the environment's execute calls and the model's queries
(MINI_BATCH_TIMING=1: result.json's "timing", docs/batch.md).  So it is
what the batch adds around each task: forking the worker, making the
workspace, opening and closing the sandbox session, rendering the
templates, writing the trajectory and the outputs, and the time workers
wait for a free core.  A second table splits it by phase (ms per task, as
the workers and the batch process measured them).  The baseline in the
same run is a bare fork+exec of /bin/true per command, the floor of running
anything at all.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

PHASES = ["prep", "workspace", "setup", "open", "session", "model", "commands", "save", "agent", "close", "verify"]


def rss_kb(pid, key="VmRSS:"):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def hwm_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def output_fs(path):
    """The filesystem the outputs go to, as "TYPE on SOURCE at MOUNT", with
    ", no journal" for an ext4 that has none: there, creating a file costs
    more the more files were deleted nearby in the last 30 s (the inode
    allocator reads each recently freed inode's block to skip it), which
    the overhead counts (docs/batch.md, "Performance")."""
    best = None
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                a = line.split()
                sep = a.index("-")
                mnt = a[4].replace("\\040", " ")
                if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and (not best or len(mnt) >= len(best[0])):
                    best = (mnt, a[sep + 1], a[sep + 2])
    except (OSError, ValueError):
        return "unknown"
    if not best:
        return "unknown"
    mnt, typ, src = best
    note = ""
    if typ == "ext4":
        dev = os.path.basename(src)
        journals = os.listdir("/proc/fs/jbd2") if os.path.isdir("/proc/fs/jbd2") else []
        if not any(j.rsplit("-", 1)[0] == dev for j in journals):
            note = ", no journal"
    return f"{typ} on {src} at {mnt}{note}"


def main():
    mini_bin = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    workers = [int(w) for w in (sys.argv[4] if len(sys.argv) > 4 else "1,2,4,8").split(",")]
    tmp = tempfile.mkdtemp(prefix="mini-batch-bench.")
    os.chmod(tmp, 0o755)
    daemon = None
    try:
        outputs = [f"Step {i}.\n```mswea_bash_command\necho step {i}\n```" for i in range(steps - 1)]
        outputs.append("Done.\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```")
        cfg = os.path.join(tmp, "cfg.json")
        with open(cfg, "w") as f:
            json.dump({"model": {"model_class": "deterministic", "cost_per_call": 0.0, "outputs": outputs}}, f)
        tasks = os.path.join(tmp, "tasks.jsonl")
        with open(tasks, "w") as f:
            for i in range(n):
                f.write(json.dumps({"instance_id": f"b{i:04d}", "problem_statement": "p"}) + "\n")
        os.mkdir(os.path.join(tmp, "run"), 0o700)  # the daemon wants its socket's directory private
        sock = os.path.join(tmp, "run", "sock")
        daemon = subprocess.Popen([os.path.join(mini_bin, "mini-sandboxd"), "--socket", sock, "--state-dir",
                                   os.path.join(tmp, "state"), "--foreground"], stdout=subprocess.DEVNULL,
                                  stderr=open(os.path.join(tmp, "daemon.log"), "w"))
        for _ in range(1000):
            if os.path.exists(sock) or daemon.poll() is not None:
                break
            time.sleep(0.01)
        if not os.path.exists(sock):
            print("mini-sandboxd did not start:", open(os.path.join(tmp, "daemon.log")).read())
            sys.exit(1)

        # Baseline: fork+exec of /bin/true, once per command the batch runs.
        t0 = time.monotonic()
        for _ in range(min(n * steps, 1000)):
            subprocess.run(["/bin/true"])
        fork_exec_ms = (time.monotonic() - t0) / min(n * steps, 1000) * 1000

        rows = []
        splits = []
        for w in workers:
            out = os.path.join(tmp, f"out-w{w}")
            cmd = [os.path.join(mini_bin, "mini"), "batch", tasks, "-o", out, "-w", str(w), "-c", "mini", "-c",
                   cfg, "-c", f"environment.socket={sock}", "--sandbox", "strict"]
            t0 = time.monotonic()
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                 env=dict(os.environ, MINI_BATCH_TIMING="1"))
            peak = peak_all = 0
            while p.poll() is None:
                peak = max(peak, hwm_kb(p.pid))
                # The batch, its workers and the daemon: their resident sets
                # added up (pages the forks share counted in each).
                peak_all = max(peak_all, sum(rss_kb(q) for q in [p.pid, daemon.pid] + children(p.pid)))
                time.sleep(0.02)
            wall = time.monotonic() - t0
            err = p.stderr.read()
            if p.returncode != 0:
                print(err)
                sys.exit(1)
            phases = dict.fromkeys(PHASES, 0.0)
            submitted = 0
            for i in range(n):
                iid = f"b{i:04d}"
                r = json.load(open(os.path.join(out, iid, "result.json")))
                submitted += r["exit_status"] == "Submitted"
                for k in PHASES:
                    phases[k] += r["timing"].get(k + "_s", 0)  # an older build's may lack some
            if submitted != n:
                print(f"{n - submitted} of {n} tasks not submitted (see {out}/*/result.json): no figures")
                sys.exit(1)
            cmd_s, model_s = phases["commands"], phases["model"]
            parent = re.search(r"timing: per task, ([\d.]+) ms handing it to a worker, ([\d.]+) ms reading its "
                               r"result, ([\d.]+) ms writing the outputs(?:; (\d+) group commits, ([\d.]+) ms each)?", err)
            overhead_ms = (w * wall - cmd_s - model_s) / n * 1000
            rows.append((w, n / wall, wall, cmd_s / (n * steps) * 1000, overhead_ms, peak / 1024,
                         hwm_kb(daemon.pid) / 1024, peak_all / 1024, submitted))
            split = {k: v / n * 1000 for k, v in phases.items()}
            split["agent"] -= split["model"] + split["commands"] + split["save"]  # the agent's own work
            split["start"], split["reap"], split["outputs"], commits, commit_ms = (float(x or 0) for x in parent.groups())
            split["commits"] = commits
            split["commit ms"] = commit_ms
            splits.append((w, split))
        print(f"mini batch: {n} deterministic tasks x {steps} steps, strict sandbox; "
              f"baseline fork+exec of /bin/true: {fork_exec_ms:.2f} ms; outputs on {output_fs(os.path.realpath(tmp))}")
        print(f"{'workers':>7} {'tasks/s':>8} {'wall s':>7} {'ms/command':>10} {'overhead ms/task':>16} "
              f"{'x fork+exec':>11} {'batch peak MiB':>14} {'daemon peak MiB':>15} {'all peak MiB':>12} {'submitted':>9}")
        for w, tps, wall, per_cmd, ov, bp, dp, ap, sub in rows:
            print(f"{w:>7} {tps:>8.1f} {wall:>7.2f} {per_cmd:>10.2f} {ov:>16.2f} {ov / fork_exec_ms:>11.1f} "
                  f"{bp:>14.1f} {dp:>15.1f} {ap:>12.1f} {sub:>6}/{n}")
        cols = ["prep", "workspace", "open", "session", "agent", "save", "close", "start", "reap", "outputs", "commits",
                "commit ms"]
        print("where it goes, ms per task: in the worker (prep: its directory and config; open: model, session,"
              " agent; session: of open, the sandbox session's (the daemon's part); agent: its own work besides"
              " model, commands and saves; close: the session's end), and in"
              " the batch process (start: handing the task to a worker; reap: reading its result; outputs:"
              " preds.json and summary.json, and the group commits: how many in the run, ms each)")
        print(f"{'workers':>7} " + " ".join(f"{c:>9}" for c in cols))
        for w, sp in splits:
            print(f"{w:>7} " + " ".join(f"{sp[c]:>9.3f}" for c in cols))
    finally:
        if daemon:  # also when a run failed: the daemon is ours to stop
            daemon.terminate()
            daemon.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

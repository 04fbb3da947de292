"""Checks of a `mini batch` output directory, for tests/integration/batch.sh.

    batch_check.py DIR full SRC_DIR   the 24 tasks of batch.sh's tasks.jsonl
    batch_check.py DIR failures       bad.jsonl's four tasks
    batch_check.py DIR model_error    one task whose model ran out of replies
    batch_check.py DIR merged         a merge of the three shards

Prints a one-line summary and exits 0, or prints what is wrong and exits 1.
"""

import json
import os
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def fail(msg):
    print(msg)
    sys.exit(1)


def check_preds(d, ids):
    preds = load(os.path.join(d, "preds.json"))
    if sorted(preds) != sorted(ids):
        fail(f"preds.json has {sorted(preds)}, expected {sorted(ids)}")
    for i, p in preds.items():
        if set(p) != {"model_name_or_path", "instance_id", "model_patch"} or p["instance_id"] != i:
            fail(f"preds.json[{i}] = {p}")
    return preds


def totals(d):
    s = load(os.path.join(d, "summary.json"))
    return s, s["totals"]


def full(d, src):
    ids = [f"task-{i:02d}" for i in range(24)]
    preds = check_preds(d, ids)
    s, t = totals(d)
    want = {"tasks": 24, "submitted": 24, "failed": 0, "verified": 8, "resolved": 7}
    for k, v in want.items():
        if t[k] != v:
            fail(f"totals.{k} = {t[k]}, expected {v} ({t})")
    if abs(t["resolve_rate"] - 7 / 8) > 1e-9 or abs(t["total_cost"] - 12.0) > 1e-9:
        fail(f"totals: {t}")
    for n, i in enumerate(ids):
        traj = load(os.path.join(d, i, i + ".traj.json"))
        if traj.get("instance_id") != i or traj["info"]["exit_status"] != "Submitted":
            fail(f"{i}: trajectory instance_id {traj.get('instance_id')}, exit {traj['info']['exit_status']}")
        user = traj["messages"][1]["content"]
        if user != f"Task number {n} in repo{n} (id {i})":
            fail(f"{i}: the task's fields in the template: {user!r}")
        ws = os.path.join(d, i, "workspace")
        # The submission: what the first command saw in the fresh workspace, then its path.
        listing = {5: "from-src.txt", 6: "", 7: "later.txt"}.get(n, "")
        if preds[i]["model_patch"] != f"{listing}\n{ws}\n":
            fail(f"{i}: model_patch {preds[i]['model_patch']!r}, expected the listing {listing!r} and {ws}")
        r = s["tasks"][i]
        v = r["verify"]
        if n % 3 == 0 or n == 3:
            want_v = "unresolved" if n == 3 else "resolved"
            if not v or v["status"] != want_v:
                fail(f"{i}: verify {v}, expected {want_v}")
        elif v is not None:
            fail(f"{i}: verify {v} without a verify command")
        if r["steps"] != 2 or abs(r["cost"] - 0.5) > 1e-9 or r["exit_status"] != "Submitted":
            fail(f"{i}: summary {r}")
    return f"24 tasks, resolve rate {t['resolve_rate']}"


def failures(d):
    check_preds(d, ["setup-fails", "no-workspace", "slow", "fine"])
    s, t = totals(d)
    r = s["tasks"]
    want = {"setup-fails": "SetupError", "no-workspace": "WorkspaceError", "fine": "Submitted"}
    for i, st in want.items():
        if r[i]["exit_status"] != st:
            fail(f"{i}: exit_status {r[i]['exit_status']}, expected {st}")
    if "broken" not in (r["setup-fails"]["error"] or ""):
        fail(f"setup-fails: the error should quote the setup's output: {r['setup-fails']['error']}")
    if "nonexistent" not in (r["no-workspace"]["error"] or ""):
        fail(f"no-workspace: the error should name the directory: {r['no-workspace']['error']}")
    if r["slow"]["exit_status"] in ("Submitted", "") or r["slow"]["wall_s"] > 30:
        fail(f"slow: {r['slow']}")
    if t["failed"] != 3 or t["submitted"] != 1:
        fail(f"totals {t}")
    return f"SetupError, WorkspaceError, {r['slow']['exit_status']} (wall time), Submitted"


def model_error(d):
    check_preds(d, ["fine"])
    s, t = totals(d)
    r = s["tasks"]["fine"]
    if r["exit_status"] in ("Submitted", "") or not os.path.exists(r["trajectory"]):
        fail(f"fine: {r}")
    return f"exit status {r['exit_status']}, trajectory saved"


def merged(d):
    check_preds(d, [f"task-{i:02d}" for i in range(24)])
    s, t = totals(d)
    if t["tasks"] != 24 or len(s["tasks"]) != 24 or t["resolved"] != 7:
        fail(f"merged totals {t}")
    return "24 tasks"


if __name__ == "__main__":
    d, what = sys.argv[1], sys.argv[2]
    fn = {"full": full, "failures": failures, "model_error": model_error, "merged": merged}[what]
    print(fn(d, *sys.argv[3:]))

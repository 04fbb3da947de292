"""Differential checks of mini's trajectories against mini-swe-agent 2.4.6's.

Each tests/integration/fidelity/<name>.json holds a scenario: the task, the
config mini runs with, and `expected`, the trajectory mini-swe-agent 2.4.6
wrote for the same scripted replies (InteractiveAgent in yolo mode with
confirm_exit off, DeterministicModel or DeterministicToolcallModel,
LocalEnvironment), normalised by normalise() below with the run's paths as
<TRAJ>, <WS>, <HOME>.  CI has no copy of mini-swe-agent: the expected
values were produced once by running it.

Normalising keeps everything the agent loop decides and drops only what
legitimately differs: timestamps, the versions, the model's and the
environment's own config sections and class names, a Python traceback's
frames (its last line, the exception, stays).
"""
import json
import os

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fidelity")


def load_fixture(name):
    with open(os.path.join(FIXTURES, name + ".json"), encoding="utf-8") as f:
        return json.load(f)


def subst(v, subs):
    if isinstance(v, str):
        for a, b in subs.items():
            v = v.replace(a, b)
        return v
    if isinstance(v, list):
        return [subst(x, subs) for x in v]
    if isinstance(v, dict):
        return {k: subst(x, subs) for k, x in v.items()}
    return v


def normalise(t, subs):
    """The comparable part of trajectory t: the run's paths substituted,
    timestamps, versions, the model and environment sections and Python
    traceback frames left out."""
    t = subst(t, subs)
    cfg = t["info"]["config"]
    for k in ("model", "model_type", "environment", "environment_type", "agent_type"):
        cfg.pop(k, None)
    t["info"].pop("mini_version", None)
    msgs = []
    for m in t["messages"]:
        ex = m.get("extra")
        if isinstance(ex, dict):
            ex.pop("timestamp", None)
            if "traceback" in ex:
                ex["traceback"] = ex["traceback"].splitlines()[-1]
        msgs.append(m)
    t["messages"] = msgs
    return t


def python_bytes_ok(raw):
    """mini's file is byte for byte what json.dump(indent=2) writes for its content."""
    return json.dumps(json.loads(raw), indent=2) == raw


def first_diff(a, b):
    al, bl = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(al, bl)):
        if x != y:
            return f"line {i + 1}: mini-swe-agent {x!r}, mini {y!r}"
    return f"lengths {len(al)} vs {len(bl)} lines"

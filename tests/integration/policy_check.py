"""Checks of tests/integration/policy.sh: an audit log replayed against
the trajectory of the same run.

    check_audit(traj_path, audit_path, expect)

expect: one (command, decision, by) per action, in order; by may be None
(any).  Every audit line must be valid JSON with the documented fields;
its command, step and order must be the trajectory's actions'; a denied
action's observation must say "Action blocked" with the line's reason and
its command must not have run; an allowed one's observation must carry
the line's returncode.
"""

import json
import re

FIELDS = ("time", "run", "step", "command", "rule", "decision", "by", "reason")
RAN = ("returncode", "duration_ms", "output_bytes", "environment", "profile", "isolation")


def actions_of(traj):
    """(step, command, observation) for each action of the trajectory."""
    msgs = traj["messages"]
    out, step = [], 0
    for i, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        step += 1
        acts = (m.get("extra") or {}).get("actions") or []
        obs = [x for x in msgs[i + 1:i + 1 + len(acts)] if x["role"] in ("user", "tool")]
        for k, a in enumerate(acts):
            out.append((step, a["command"], obs[k]["content"] if k < len(obs) else None))
    return out


def load_audit(path):
    lines = []
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            assert raw.endswith("\n"), f"audit line {n} is not whole: {raw!r}"
            rec = json.loads(raw)
            for k in FIELDS:
                assert k in rec, f"audit line {n} lacks {k}: {rec}"
            lines.append(rec)
    return lines


def check_audit(traj_path, audit_path, expect, submitted=True):
    with open(traj_path, encoding="utf-8") as f:
        traj = json.load(f)
    acts = actions_of(traj)
    if submitted:
        acts = acts[:-1]  # the submission runs but has no observation
    audit = load_audit(audit_path)
    assert len(audit) >= len(acts), f"{len(audit)} audit lines for {len(acts)} actions"
    assert len({r["run"] for r in audit}) == 1, "more than one run id in one run's log"
    assert len(expect) == len(acts), f"test expects {len(expect)} actions, trajectory has {len(acts)}"
    for (step, cmd, obs), rec, (want_cmd, want_dec, want_by) in zip(acts, audit, expect):
        assert rec["command"] == cmd == want_cmd, f"audit {rec['command']!r}, traj {cmd!r}, want {want_cmd!r}"
        assert rec["step"] == step, f"{cmd}: audit step {rec['step']}, trajectory step {step}"
        assert rec["decision"] == want_dec, f"{cmd}: decision {rec['decision']}, want {want_dec} ({rec})"
        if want_by is not None:
            assert rec["by"] == want_by, f"{cmd}: by {rec['by']!r}, want {want_by!r}"
        if rec["decision"] == "deny":
            assert "Action blocked" in obs and rec["reason"] in obs, f"{cmd}: observation {obs!r}, line {rec}"
            assert "returncode" not in rec, f"{cmd}: denied but has a returncode: {rec}"
        else:
            for k in RAN:
                assert k in rec, f"{cmd}: allowed line lacks {k}: {rec}"
            m = re.search(r"<returncode>(-?\d+)</returncode>", obs or "")
            assert m and int(m.group(1)) == rec["returncode"], f"{cmd}: returncode {rec['returncode']} vs {obs!r}"
    return audit

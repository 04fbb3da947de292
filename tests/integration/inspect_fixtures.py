#!/usr/bin/env python3
"""Trajectories for the `mini inspect` tests, written into a folder laid
out as `mini batch` writes one (DIR/ID/ID.traj.json, DIR/summary.json),
plus mini-swe-agent's own formats, hostile content, and broken files.

    inspect_fixtures.py DIR            the folder
    inspect_fixtures.py DIR --many N   N small trajectories (the benchmark)

Prints a JSON object of facts the tests check against: per trajectory id,
its step count (model turns, as mini-swe-agent's inspector counts pages
after the prompts), exit status, resolved; the broken files.
"""
import json
import os
import sys

# Strings a trajectory may carry that must reach no terminal and no page raw.
HOSTILE_TEXT = (
    "title\x1b]0;pwned-title\x07 clear\x1b[2J\x1b[H csi\x9b31m bidi\u202eevil\u202c "
    "</script><script>document.title='pwned-script'</script> "
    "<img src=x onerror=\"document.title='pwned-img'\"> & \"quotes\" 'single'"
)


def mini_traj(task, turns, exit_status="Submitted", instance_id=None, cost=0.0, extra_info=None):
    """A trajectory as mini writes it (text-based actions)."""
    msgs = [
        {"role": "system", "content": "You are a helpful assistant. SYSTEM-PROMPT-MARK"},
        {"role": "user", "content": f"<task>\n{task}\n</task>\n\nINSTANCE-PROMPT-MARK"},
    ]
    for i, (thought, cmd, out, rc) in enumerate(turns):
        msgs.append({
            "role": "assistant",
            "content": f"{thought}\n\n```mswea_bash_command\n{cmd}\n```",
            "extra": {"actions": [{"command": cmd}], "cost": cost / max(len(turns), 1), "timestamp": 1.0 + i},
        })
        msgs.append({
            "role": "user",
            "content": f"<returncode>{rc}</returncode>\n<output>\n{out}</output>",
            "extra": {"raw_output": out, "returncode": rc, "timestamp": 1.5 + i},
        })
    msgs.append({"role": "exit", "content": "", "extra": {"exit_status": exit_status, "submission": ""}})
    t = {
        "info": {
            "model_stats": {"instance_cost": cost, "api_calls": len(turns)},
            "config": {"model": {"model_name": "test/model"}},
            "mini_version": "0.1.0",
            "exit_status": exit_status,
            "submission": "",
        },
        "messages": msgs,
        "trajectory_format": "mini-swe-agent-1.1",
    }
    if instance_id:
        t["instance_id"] = instance_id
    if extra_info:
        t["info"].update(extra_info)
    return t


def toolcall_traj():
    """mini with a tool-calling model: tool_calls, role "tool"."""
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "<task>\nList the files.\n</task>"},
        {"role": "assistant", "content": "Listing.", "reasoning_content": "REASONING-MARK think first",
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "bash", "arguments": json.dumps({"command": "ls -la TOOLCALL-MARK"})}}],
         "extra": {"actions": [{"command": "ls -la TOOLCALL-MARK", "tool_call_id": "c1"}]}},
        {"role": "tool", "tool_call_id": "c1", "content": "<returncode>0</returncode>\n<output>\nfile.txt\n</output>",
         "extra": {"raw_output": "file.txt\n", "returncode": 0}},
        {"role": "exit", "content": "", "extra": {"exit_status": "LimitsExceeded", "submission": ""}},
    ]
    return {"info": {"model_stats": {"instance_cost": 1.25, "api_calls": 1}, "exit_status": "LimitsExceeded",
                     "submission": ""}, "messages": msgs, "trajectory_format": "mini-swe-agent-1.1"}


def mswea_list_traj():
    """mini-swe-agent's older bare list of messages."""
    return [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Hello, solve this problem."},
        {"role": "assistant", "content": "I'll help.\n\n```mswea_bash_command\nls -la\n```"},
        {"role": "user", "content": "Command output here."},
        {"role": "assistant", "content": "Done.\n\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"},
    ]


def mswea_parts_traj():
    """Content as lists of parts, a JSON observation, the Responses API."""
    return {
        "instance_id": "parts-1",
        "info": {"exit_status": "Submitted", "submission": "PATCH-MARK",
                 "model_stats": {"instance_cost": 0.05, "api_calls": 3}},
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": "sys"}]},
            {"role": "user", "content": [{"type": "text", "text": "<pr_description>\nFix PARTS-TASK\n</pr_description>"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Anthropic style."},
                                              {"type": "tool_use", "id": "t1", "input": {"command": "cat ANTHROPIC-MARK"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                          "content": json.dumps({"returncode": 3, "output": "JSON-OBS-MARK"})}]},
            {"type": "assistant", "output": [
                {"type": "message", "content": [{"type": "text", "text": "Responses API."}]},
                {"type": "function_call", "name": "bash", "arguments": json.dumps({"command": "ls RESPONSES-MARK"})}]},
            {"role": "assistant", "content": "plain"},
        ],
        "trajectory_format": "mini-swe-agent-1.1",
    }


def write(path, data, raw=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(raw if raw is not None else json.dumps(data, indent=2).encode())


def main():
    d = sys.argv[1]
    facts = {"trajs": {}, "broken": []}
    if len(sys.argv) > 3 and sys.argv[2] == "--many":
        n = int(sys.argv[3])
        tasks = {}
        for i in range(n):
            iid = f"task-{i:05d}"
            turns = [(f"Step {k} of {iid}.", f"echo {k}", "x" * 200 + "\n", 0) for k in range(8)]
            write(f"{d}/{iid}/{iid}.traj.json", mini_traj(f"Task {iid}", turns, instance_id=iid, cost=0.01 * i))
            tasks[iid] = {"instance_id": iid, "exit_status": "Submitted",
                          "verify": {"status": "resolved" if i % 3 else "unresolved"}}
        write(f"{d}/summary.json", {"tasks": tasks, "totals": {}})
        print(json.dumps({"n": n}))
        return

    # A batch output folder: two verified tasks, one not verified.
    many_lines = "".join(f"line {k} LONG-OUTPUT\n" for k in range(300))
    a = mini_traj("Fix the FIRST-TASK bug.", [
        ("THOUGHT: look around.", "ls -la", "a.py\nb.py\n", 0),
        ("THOUGHT: run the tests.", "python3 -m pytest SEARCH-TARGET-CMD", many_lines + "NEEDLE-IN-OUTPUT\n", 1),
        ("THOUGHT: submit.", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "", 0),
    ], instance_id="alpha-1", cost=0.5)
    b = mini_traj("Second task.", [("THOUGHT: one.", "true", "", 0)], exit_status="LimitsExceeded",
                  instance_id="beta-2", cost=12.5)
    c = mini_traj("Third task.", [("THOUGHT: two.", "true", "", 0), ("THOUGHT: three.", "true", "", 0)],
                  instance_id="gamma-3")
    write(f"{d}/alpha-1/alpha-1.traj.json", a)
    write(f"{d}/beta-2/beta-2.traj.json", b)
    write(f"{d}/gamma-3/gamma-3.traj.json", c)
    write(f"{d}/summary.json", {"tasks": {
        "alpha-1": {"instance_id": "alpha-1", "exit_status": "Submitted", "verify": {"status": "resolved"}},
        "beta-2": {"instance_id": "beta-2", "exit_status": "LimitsExceeded", "verify": {"status": "unresolved"}},
        "gamma-3": {"instance_id": "gamma-3", "exit_status": "Submitted", "verify": None},
    }, "totals": {}})
    facts["trajs"]["alpha-1"] = {"steps": 3, "exit": "Submitted", "resolved": "yes"}
    facts["trajs"]["beta-2"] = {"steps": 1, "exit": "LimitsExceeded", "resolved": "no"}
    facts["trajs"]["gamma-3"] = {"steps": 2, "exit": "Submitted", "resolved": "-"}

    # Other formats.
    write(f"{d}/formats/toolcall.traj.json", toolcall_traj())
    write(f"{d}/formats/mswea-list.traj.json", mswea_list_traj())
    write(f"{d}/formats/mswea-parts.traj.json", mswea_parts_traj())
    facts["trajs"]["toolcall"] = {"steps": 1, "exit": "LimitsExceeded", "resolved": "-"}
    facts["trajs"]["mswea-list"] = {"steps": 2, "exit": "-", "resolved": "-"}
    facts["trajs"]["parts-1"] = {"steps": 3, "exit": "Submitted", "resolved": "-"}

    # Hostile content: escapes, markup, invalid UTF-8 (raw bytes in the
    # file), \u0000 and an unpaired surrogate (as Python's json.dumps writes
    # them), a huge line.
    h = mini_traj("HOSTILE-TASK " + HOSTILE_TEXT, [
        ("THOUGHT: " + HOSTILE_TEXT, "printf '\\033]0;x\\007' " + HOSTILE_TEXT,
         HOSTILE_TEXT + "\nnul\x00byte surrogate\udc80 INVALID-UTF8-HERE\n" + "W" * 5000 + "\n", 0)],
        instance_id="hostile")
    raw = json.dumps(h, indent=2).encode()
    raw = raw.replace(b"INVALID-UTF8-HERE", b"INVALID-UTF8-\xff\xfe\xc3-HERE")
    write(f"{d}/hostile/hostile.traj.json", None, raw)
    facts["trajs"]["hostile"] = {"steps": 1, "exit": "Submitted", "resolved": "-"}

    # Broken files: the rest of the folder still opens.
    whole = json.dumps(mini_traj("cut", [("t", "c", "o", 0)]), indent=2).encode()
    write(f"{d}/broken/truncated.traj.json", None, whole[: len(whole) // 2])
    write(f"{d}/broken/garbage.traj.json", None, b'{"messages": [\n  {"role": "user",, "content": "x"}\n]}\n')
    write(f"{d}/broken/empty.traj.json", None, b"")
    write(f"{d}/broken/notatraj.traj.json", {"some": "other", "format": True})
    facts["broken"] = {
        "truncated": "truncated",
        "garbage": "line 2, column",
        "empty": "empty",
        "notatraj": "not a trajectory",
    }
    print(json.dumps(facts))


if __name__ == "__main__":
    main()

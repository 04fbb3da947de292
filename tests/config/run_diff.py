#!/usr/bin/env python3
"""Differential tests of mini's config loading against the Python libraries
mini-swe-agent uses.

  run_diff.py CONFIG_TOOL SOURCE_DIR

1. YAML: every tests/config/yaml/*.yaml, the built-in configs, and cases
   generated here (scalars, block scalars) are read by PyYAML's
   yaml.safe_load and by `config_tool yaml`; both must give the same JSON
   value, or both fail.  Files named *.err.yaml must fail in mini even where
   PyYAML accepts them (duplicate keys, non-string keys: documented
   differences).
2. .env: tests/config/dotenv/*.env and generated cases against
   python-dotenv's DotEnv(interpolate=True, override=False).dict(), when
   python-dotenv is installed (skipped otherwise).
3. Templates: the built-in configs' templates render under Jinja2 with
   StrictUndefined and the variables docs/config.md promises, and a 12001
   character output shows its first and last 5000 characters and "2001
   characters elided" (skipped when Jinja2 is missing).

Prints "N passed, N failed" and exits non-zero on any failure.
"""
import glob
import json
import math
import os
import subprocess
import sys
import tempfile

import logging

import yaml

logging.disable(logging.CRITICAL)   # python-dotenv's warnings about skipped lines

tool, src = sys.argv[1], sys.argv[2]
here = os.path.join(src, "tests", "config")
passed = failed = skipped = 0


def report(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {what}: {detail}")


def norm(v):
    """Numbers as floats (mini keeps every number as a double)."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return ("nan",) if isinstance(v, float) and math.isnan(v) else float(v)
    if isinstance(v, list):
        return [norm(x) for x in v]
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    raise TypeError(type(v))


def python_yaml(path):
    try:
        with open(path, encoding="utf-8") as f:
            v = yaml.safe_load(f.read())
        return "OK", norm(json.loads(json.dumps(v)))
    except Exception as e:  # parse errors, and values JSON cannot hold
        return "ERR", f"{type(e).__name__}: {e}".replace("\n", " ")


def run_tool(mode, paths, env=None):
    out = {}
    for i in range(0, len(paths), 200):
        chunk = paths[i:i + 200]
        r = subprocess.run([tool, mode, *chunk], capture_output=True, text=True, env=env, check=True)
        for line in r.stdout.splitlines():
            name, status, rest = line.split("\t", 2)
            out[name] = (status, rest)
    return out


def compare_yaml(paths, must_fail=()):
    ours = run_tool("yaml", paths)
    for p in paths:
        status, rest = ours[p]
        want_status, want = python_yaml(p)
        label = os.path.relpath(p, src) if p.startswith(src) else p
        if p in must_fail or p.endswith(".err.yaml"):
            report(status == "ERR", label, f"mini accepted it: {rest}")
            continue
        if status != want_status:
            report(False, label, f"mini {status} ({rest[:200]}), PyYAML {want_status} ({str(want)[:200]})")
            continue
        if status == "ERR":
            report(True, label)
            continue
        got = norm(json.loads(rest))
        report(got == want, label, f"\n  mini:   {json.dumps(got)[:400]}\n  PyYAML: {json.dumps(want)[:400]}")


# ---- 1. YAML ----
tmp = tempfile.mkdtemp(prefix="mini-config-diff-")
files = sorted(glob.glob(os.path.join(here, "yaml", "*.yaml")))
files += sorted(glob.glob(os.path.join(src, "agent", "configs", "*.yaml")))

generated = []
must_fail = set()


def gen(text, fail=False):
    """A generated case; fail: mini must refuse it (a documented difference)."""
    p = os.path.join(tmp, f"gen{len(generated):04d}.yaml")
    with open(p, "w", encoding="utf-8") as f:
        f.write(text)
    generated.append(p)
    if fail:
        must_fail.add(p)


scalars = """
~ null Null NULL NuLL '' "" none None
true True TRUE false False FALSE yes Yes YES no No NO on On ON off Off OFF y n Y N tRUE oN
0 00 007 08 09 012 0o17 0b101 0b 0b_ 0b012 -0b11 +0b1 0x1F 0X1F -0x1f 0xg 0x_ 0x1_f
1 -1 +1 1_000 1__0 _1 1_ -0 +0 123456789012345678 9007199254740993 1e3 1E3 1e+3 1.0e3 1.0e+3 1.0E-3 1.e+2
1. .5 -.5 +.5 ._5 0.5 -0.5 1_0.5 1.5_ 3.14159 6.8523015e+5 685.230_15e+03 -1.5e-10 . .. 1.2.3 1,5
.inf .Inf .INF -.inf +.inf .nan .NaN .NAN -.nan inf nan .infinity
1:30 1:30:00 190:20:30 -1:30 0:30 1:3 1:60 1:59 1:5x 1:30.5 -1:30.5 190:20:30.15 12:30:60.5
2001-12-14 2001-12-14t21:59:43.10-05:00 2001-12-14 21:59:43.10 -5 2001-12-15T02:59:43.1Z 2002-12-14 2001-1-1
2001-12-1 2001-1-1T1:02:03 2001-12-14T21:59:43 2001-13-14 12-12-12
<< = < - -- --- ... a-b @a `a ! !! & * | > %
hello hello_world "quoted" 'single' a:b a#b a\\tb http://x.y/z?q=1 C:\\path ~/dir $HOME {{task}}
0.0 -0.0 1e 1e+ .e3 1.0e 0x 0o 0b2 +. -. 00.5 0.5.5 1_000.5 1_000_000 0b1_0 0x_1
"""
for tok in scalars.split():
    gen(f"key: {tok}\n")
    gen(f"- {tok}\n")
    # In a flow mapping "1,5" makes 5 a key (an integer key: refused), and
    # libyaml takes "?" inside a plain scalar where PyYAML stops (mini is
    # the more lenient there).
    if "," not in tok and "?" not in tok:
        gen(f"{{k: {tok}}}\n")

# Quoted and tagged scalars.
for tok in ["'123'", '"123"', "! 123", "! '123'", "!!str 123", "!!int '12'", "!!int ' 12 '", "!!int 0x1F",
            "!!int 012", "!!int 1:30", "!!int abc", "!!float 1e3", "!!float '1'", "!!float .inf", "!!float x",
            "!!bool yes", "!!bool 'ON'", "!!bool maybe", "!!null foo", "!!null ''", "!!str", "!!int",
            "\"a\\tb\\n\"", "\"\\x41\\u00e9\\U0001F600\"", "'it''s'", "\"\\\"q\\\"\"", "!!binary aGk=",
            "!!timestamp 2001-01-01", "!foo bar", "!!seq [1]", "!!map {a: 1}", "!!seq a", "!!str [1]",
            "=", "<<", "!!merge x"]:
    gen(f"key: {tok}\n")

# Block scalars: every chomping and indentation indicator, with and without
# trailing and leading blank lines, more-indented lines and tabs.
bodies = [
    ["line one", "line two"],
    ["line one", "", "line three"],
    ["line one", "  indented", "back"],
    ["", "after a blank"],
    ["trailing", "", ""],
    ["  leading more indented", "normal"],
    ["tab\there", "x"],
    ["a", "  b", "", "  c", "d"],
    ["{% if x -%}", "  {{ y }}", "{%- endif %}"],
]
for ind in ["|", "|-", "|+", ">", ">-", ">+", "|2", "|2-", ">2+", "|1", ">1-"]:
    for body in bodies:
        for tail in ["", "\n", "\n\n", "other: 1\n", "\n# comment\nother: 1\n"]:
            lines = "".join(("    " + l if l else "") + "\n" for l in body)
            gen(f"key: {ind}\n{lines}{tail}")
            gen(f"- {ind}\n{lines}{tail}")
gen("key: |\n")
gen("key: |\n\n\n")
gen("key: >\n  a\n\n  b\n\n\n  c\n")
gen("key: >\n  a\n   b\n  c\n")
gen("key: >-\n  one\n  two\n\n")
gen("a:\n  b: |\n    deep\n      deeper\n  c: >\n    folded\n    text\n")

# Plain multi-line scalars, flow collections, comments, documents.
for text in [
    "key: plain text\n  continued here\n  and here\n",
    "key: a\n\n  b\n",
    "key: 'single\n  quoted\n\n  lines'\n",
    'key: "double\n  quoted \\\n  escaped\n  newline"\n',
    "{a: 1, b: [x, y, {c: d}], 'e': \"f\"}\n",
    "[1, [2, [3, []]], {}]\n",
    "? complex\n: value\n",
    "a: 1 # comment\n# full\nb: 2\n",
    "---\na: 1\n...\n",
    "--- |\n  doc scalar\n",
    "%YAML 1.1\n---\na: 1\n",
    "%TAG !e! tag:example.com,2000:\n---\na: !e!foo 1\n",
    "\ufeffa: 1\n",
    "a: 1\r\nb: 2\r\n",
    "a: [1, 2\n",
    "a: {b: 1\n",
    "a:\n\t- tab\n",
    "a: 1\n b: 2\n",
    "- a\nb: 1\n",
    "a: b: c\n",
    "a: 'unterminated\n",
    "a: *nope\n",
    "a: &x 1\nb: *x\nc: &x 2\n",
    "a: &x [1, 2]\nb: *x\n",
    "base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3\n",
    "a: &a {x: 1}\nb: &b {x: 2, z: 3}\nc:\n  <<: [*a, *b]\n  w: 0\n",
    "a: &a {x: 1}\nc:\n  <<: *a\n  <<: {y: 2}\n",
    "c:\n  <<: {x: 1}\n  x: 2\n",
    "c:\n  '<<': {x: 1}\n",
    "c:\n  <<: 1\n",
    "c:\n  <<: [1]\n",
    "a: &a {x: &b {y: 1}}\nb: *b\nc: {<<: *a}\n",
    "a: &a [*a]\n",
    "--- 1\n--- 2\n",
    "",
    "# only a comment\n",
    "---\n",
    "...\n",
    "plain\n",
    "'quoted'\n",
    "- - - deep\n",
    "a: !!python/object:os.system x\n",
    "[a]: b\n",
]:
    gen(text)
# Documented differences: PyYAML accepts these, mini refuses them.
for text in ["a: 1\na: 2\n", "1: one\n", "true: yes\n", "~: null\n", "{1,5}\n", "\"a\\0b\": 1\n",
             "key: \"\\0\"\n", "a: {x: 1, x: 2}\n"]:
    gen(text, fail=True)

compare_yaml(files + generated, must_fail)

# Alias expansion limits: a "billion laughs" document must fail, not explode.
bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
for i in range(1, 9):
    prev = chr(ord("a") + i - 1)
    cur = chr(ord("a") + i)
    bomb += f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 10) + "]\n"
p = os.path.join(tmp, "bomb.yaml")
with open(p, "w") as f:
    f.write(bomb)
status, rest = run_tool("yaml", [p])[p]
report(status == "ERR" and "values" in rest, "alias bomb is refused", rest)

# ---- 2. .env ----
try:
    from dotenv.main import DotEnv
except ImportError:
    DotEnv = None
    print("skipped: python-dotenv is not installed")

if DotEnv is not None:
    envs = sorted(glob.glob(os.path.join(here, "dotenv", "*.env")))
    lines = [
        "A=1", "A = 1", "A= 1 ", "export A=1", "export  A=1", "exportA=1", "A", "A # c", "#A=1", "A=#x",
        "A= #x", "A=a #x", "A=a#x", "A=a\t#x", "A='a #x'", 'A="a #x"', "A='a'b", 'A="a" #c', 'A="a" junk',
        "A='a\\'b'", "A='a\\'", 'A="a\\"', 'A="a\\nb\\t\\\\\\q"', "A='a\\nb\\\\'", "'A'=1", "'A B'=1", "'A=B'=1",
        "''=1", "=1", " A=1", "A=${HOME_FOR_TEST}", "A=${MISSING:-dflt}", "A=${MISSING}", "A=x${B}y", "A=${B:x}",
        "A='${HOME_FOR_TEST}'", "A=$HOME_FOR_TEST", "A=${}", "A=${:-d}", "A=${B", "A=\u00e9\u00a0", "A=a\u3000",
        "A=a\u00a0#c", "\u00a0A=1", "A=\"multi\nline\"", "A='multi\nline'", "A=\"unterminated\nB=2", "A=1\rB=2",
        "A=1\r\nB=2", "A=1\n\n\nB=2", "A\u00a0=1", "A.B-C=1", "A=1\nA=2", "A=1\nB=${A}\nA=2\nC=${A}",
        "B\nC=${B:-x}", "HOME_FOR_TEST=override\nD=${HOME_FOR_TEST}", "A=\\", "A=a\\ b", "A=\"\"", "A=''",
        "A=", "A=\t", "  # comment", "A=1 # c\nB=2",
    ]
    for i, text in enumerate(lines):
        p = os.path.join(tmp, f"env{i:03d}.env")
        with open(p, "w", encoding="utf-8", newline="") as f:
            f.write(text + "\n")
        envs.append(p)
    env = dict(os.environ, HOME_FOR_TEST="/home/test")
    env.pop("MISSING", None)
    env.pop("B", None)
    os.environ.clear()
    os.environ.update(env)
    ours = run_tool("dotenv", envs, env=env)
    for p in envs:
        status, rest = ours[p]
        try:
            want = dict(DotEnv(p, interpolate=True, override=False).dict())
            want_status = "OK"
        except Exception as e:
            want, want_status = str(e), "ERR"
        label = os.path.relpath(p, src) if p.startswith(src) else open(p, encoding="utf-8").read()[:60]
        if status != want_status:
            report(False, f".env {label!r}", f"mini {status} {rest[:200]}, python-dotenv {want_status} {want}")
            continue
        if status == "OK":
            got = json.loads(rest)
            report(got == want and list(got) == list(want), f".env {label!r}", f"mini {got}, python-dotenv {want}")
        else:
            report(True, f".env {label!r}")

    # mini config set|unset: the text python-dotenv's set_key (quote_mode
    # "always") and unset_key leave, on every file above, with and without
    # its final newline.
    from dotenv import set_key, unset_key
    import shutil
    edits = list(envs)
    for i, text in enumerate(lines):
        p = os.path.join(tmp, f"nonl{i:03d}.env")
        with open(p, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        edits.append(p)
    for op, key, value in [("set", "A", "new"), ("set", "B", "it's \u00e9"), ("set", "A B", ""),
                           ("unset", "A", None), ("unset", "B", None)]:
        args = [key, value] if op == "set" else [key]
        ours = run_tool("dotenv-" + op, args + edits)
        for p in edits:
            status, rest = ours[p]
            q = p + ".py"
            shutil.copyfile(p, q)
            (set_key(q, key, value) if op == "set" else unset_key(q, key))
            with open(q, encoding="utf-8", newline="") as f:
                want = f.read()
            label = open(p, encoding="utf-8").read()[:60]
            got = json.loads(rest) if status == "OK" else rest
            report(status == "OK" and got == want, f"{op} {key!r} in {label!r}", f"mini {got!r}, python-dotenv {want!r}")

# ---- 3. Templates ----
try:
    import jinja2
except ImportError:
    jinja2 = None
    print("skipped: Jinja2 is not installed")

if jinja2 is not None:
    def render(text, **kw):
        return jinja2.Template(text, undefined=jinja2.StrictUndefined).render(**kw)

    for path in sorted(glob.glob(os.path.join(src, "agent", "configs", "*.yaml"))):
        name = os.path.basename(path)
        with open(path) as f:
            cfg = yaml.safe_load(f)
        r = subprocess.run([tool, "load", path], capture_output=True, text=True,
                           env=dict(os.environ, MSWEA_MODEL_NAME="test/model"), check=True)
        status, rest = r.stdout.rstrip("\n").split("\t", 1)
        report(status == "OK", f"{name} loads and validates", rest)
        if status != "OK":
            continue
        full = json.loads(rest)
        uname = {"system": "Linux", "node": "host", "release": "6.1.0", "version": "#1 SMP", "machine": "x86_64"}
        for env_class, profile in [("sandbox", "strict"), ("sandbox", "standard"), ("sandbox", "permissive"),
                                   ("sandbox", "/etc/my-profile.json"), ("local", None)]:
            env_vars = {"environment_class": env_class, "env": {}, "timeout": 30}
            if env_class == "sandbox":
                env_vars |= {"profile": profile, "workspace": "/work/project", "forward_env": []}
            tv = full["agent"] | env_vars | uname | full["model"] | {"task": "Fix the bug."}
            for key in ("system_template", "instance_template"):
                try:
                    out = render(full["agent"][key], **tv)
                    ok = "{{" not in out and "{%" not in out
                    if key == "instance_template":
                        ok = ok and "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in out and "Fix the bug." in out
                        ok = ok and (("sandbox" in out and "/work/project" in out) == (env_class == "sandbox"))
                        if profile in ("strict", "standard"):
                            ok = ok and "no network" in out
                    report(ok, f"{name} {key} ({env_class} {profile})", out[:300])
                except jinja2.TemplateError as e:
                    report(False, f"{name} {key} ({env_class} {profile})", repr(e))
        obs = full["model"]["observation_template"]
        for n in (0, 5, 9999, 10000, 12001, 30000):
            text = "".join(chr(ord("a") + i % 26) for i in range(n))
            for exc in ("", "An error occurred while executing the command: Command 'x' timed out after 30 seconds"):
                out = render(obs, output={"output": text, "returncode": 0 if not exc else -1,
                                          "exception_info": exc}, **tv)
                if n < 10000:
                    ok = text in out and "elided" not in out
                else:
                    ok = (text[:5000] in out and text[-5000:] in out and text[:5001] not in out
                          and f"{n - 10000} characters elided" in out)
                ok = ok and "<returncode>" in out and ((exc in out) if exc else "<exception>" not in out)
                report(ok, f"{name} observation_template with {n} characters{' and an exception' if exc else ''}",
                       out[:200])
        # 12001 characters: head, tail, 2001 elided, exactly.
        text = "".join(chr(ord("A") + i % 26) for i in range(12001))
        out = render(obs, output={"output": text, "returncode": 0, "exception_info": ""}, **tv)
        head_ok = f"<output_head>\n{text[:5000]}\n</output_head>" in out
        tail_ok = f"<output_tail>\n{text[-5000:]}\n</output_tail>" in out
        report(head_ok and tail_ok and "2001 characters elided" in out,
               f"{name}: a 12001-character output shows head, tail and 2001 elided characters", out[:120])
        fe = full["model"]["format_error_template"]
        try:
            out = render(fe, error="No tool calls found.", actions=[], finish_reason=None, **tv)
            report("{{" not in out, f"{name} format_error_template renders", out[:200])
        except jinja2.TemplateError as e:
            report(False, f"{name} format_error_template renders", repr(e))

print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
sys.exit(1 if failed else 0)

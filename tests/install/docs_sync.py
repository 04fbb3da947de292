#!/usr/bin/env python3
"""The man pages and the shell completions say what --help says.

    docs_sync.py BIN_DIR SOURCE_DIR

For each program, the long options its --help texts name (with those of its
subcommands: mini batch ..., mini-sandbox check/bench/image) must be the
long options its man page names, and those its bash, zsh and fish
completions offer; mini-sandbox's subcommands must be in its man page and
completions.  Prints one line per check; exit 1 on a difference.
"""
import re
import subprocess
import sys

BIN, SRC = sys.argv[1], sys.argv[2]
PKG = SRC + "/packaging"
OPT = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]+")

PROGRAMS = {
    # program: (help invocations, man page, bash function, zsh functions, subcommands)
    "mini": ([[], ["batch"], ["batch", "slurm"], ["batch", "merge"], ["config"], ["inspect"]],
             "mini.1", "_mini", ["_mini_agent"], ["config", "batch", "inspect"]),
    "mini-sandbox": ([[], ["check"], ["bench"], ["image"]],
                     "mini-sandbox.1", "_mini_sandbox", ["_mini_sandbox"],
                     ["run", "check", "bench", "ping", "stats", "profiles", "image"]),
    "mini-sandboxd": ([[]], "mini-sandboxd.8", "_mini_sandboxd", ["_mini_sandboxd"], []),
}

failed = 0


def report(ok, what, detail=""):
    global failed
    print(("ok   - " if ok else "FAIL - ") + what + (("\n    " + detail) if detail and not ok else ""))
    failed += not ok


def help_text(prog, args):
    r = subprocess.run([f"{BIN}/{prog}", *args, "--help"], capture_output=True, text=True, timeout=30)
    return r.stdout + r.stderr


def function_body(text, name, opener):
    """The text of shell function `name` up to the next top-level function."""
    m = re.search(r"^" + re.escape(name) + r"\(\)\s*" + opener, text, re.M)
    if not m:
        return ""
    rest = text[m.end():]
    end = re.search(r"^[A-Za-z_][A-Za-z0-9_-]*\(\)", rest, re.M)
    return rest[: end.start()] if end else rest


def zsh_opts(body):
    # '--name[...]', {-x,--name}'[...]', '*--name[...]'
    return set(re.findall(r"(--[a-z][a-z0-9-]+)[\[=']", body)) | set(re.findall(r",(--[a-z][a-z0-9-]+)\}", body))


bash = open(PKG + "/completions/mini.bash.in").read()
zsh = open(PKG + "/completions/_mini.in").read()
fish = open(PKG + "/completions/mini.fish.in").read()

for prog, (helps, man, bash_fn, zsh_fns, subs) in PROGRAMS.items():
    want = set()
    for args in helps:
        want |= set(OPT.findall(help_text(prog, args)))
    want.discard("--")
    man_src = open(f"{PKG}/man/{man}.scd").read()
    # Example command lines (```) may name other programs' options.
    man_src = re.sub(r"^```.*?^```", "", man_src, flags=re.M | re.S)
    got_man = set(OPT.findall(man_src))
    report(want == got_man, f"{prog}: {man} documents the options --help names ({len(want)})",
           f"only in --help: {sorted(want - got_man)}; only in the man page: {sorted(got_man - want)}")

    got_bash = set(OPT.findall(function_body(bash, bash_fn, r"\{")))
    report(want == got_bash, f"{prog}: the bash completion offers them",
           f"only in --help: {sorted(want - got_bash)}; only in the completion: {sorted(got_bash - want)}")

    got_zsh = set()
    for fn in zsh_fns:
        got_zsh |= zsh_opts(function_body(zsh, fn, r"\{"))
    report(want == got_zsh, f"{prog}: the zsh completion offers them",
           f"only in --help: {sorted(want - got_zsh)}; only in the completion: {sorted(got_zsh - want)}")

    got_fish = {"--" + m for m in re.findall(r"^complete -c " + re.escape(prog) + r" .*?-l ([a-z][a-z0-9-]+)", fish, re.M)}
    report(want == got_fish, f"{prog}: the fish completion offers them",
           f"only in --help: {sorted(want - got_fish)}; only in the completion: {sorted(got_fish - want)}")

    for sub in subs:
        in_man = re.search(r"\*(" + re.escape(prog) + r" )?" + re.escape(sub) + r"\*", man_src) is not None
        in_bash = re.search(r"\b" + re.escape(sub) + r"\b", function_body(bash, bash_fn, r"\{")) is not None
        in_zsh = any(re.search(r"\b" + re.escape(sub) + r"\b", function_body(zsh, fn, r"\{")) for fn in zsh_fns)
        in_fish = re.search(r"^(set -l __mini_sb_cmds|complete -c " + re.escape(prog) + r" ).*\b" + re.escape(sub) + r"\b", fish, re.M) is not None
        report(in_man and in_bash and in_zsh and in_fish, f"{prog}: subcommand {sub} in the man page and the completions",
               f"man {in_man}, bash {in_bash}, zsh {in_zsh}, fish {in_fish}")

print(f"{'FAILED' if failed else 'all passed'}: {failed} difference(s)")
sys.exit(1 if failed else 0)

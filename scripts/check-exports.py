#!/usr/bin/env python3
"""Check the exports of the project's libraries, from a build directory.

    scripts/check-exports.py BUILD_DIR

Reads every static library the build made (`nm` of each member object)
and every program's objects, and fails (exit 1, one line per problem) when

  - a function or variable a library exports carries no project prefix
    (`mini_`, `tpl_`): a library's names must not clash with a program's
    or another library's;
  - an exported name is used by no object but the one that defines it:
    it should be `static` (or removed, when nothing calls it at all).

Names of the fuzzers' and tests' own objects are not libraries' exports and
are not checked.  Prints "exports: N checked, N problems".
"""
import os
import re
import subprocess
import sys

PREFIXES = ("mini_", "tpl_")
# The libFuzzer entry points, main, and what the linker or the sanitizers
# look for by name.
ENTRY = {"main", "LLVMFuzzerTestOneInput", "LLVMFuzzerInitialize"}


def nm(path):
    """[(object name, kind, symbol)] of a .a or .o: kind 'D' for a defined
    global, 'U' for an undefined reference."""
    out = subprocess.run(["nm", "-A", "--defined-only", "-g", path], capture_output=True, text=True).stdout
    und = subprocess.run(["nm", "-A", "-u", path], capture_output=True, text=True).stdout
    rows = []
    for kind, text in (("D", out), ("U", und)):
        for line in text.splitlines():
            # "lib.a:member.o: 0000 T name" or "file.o:0000 T name" or "lib.a:m.o:  U name"
            parts = line.rsplit(None, 2)
            if len(parts) < 2:
                continue
            sym, typ = parts[-1], parts[-2]
            where = ":".join(line.split(":")[:2]) if path.endswith(".a") else path
            if kind == "D" and typ in "TDBRGSVW":
                rows.append((where, "D", sym))
            elif kind == "U":
                rows.append((where, "U", sym))
    return rows


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    build = sys.argv[1]
    libs, objs = [], []
    for root, dirs, files in os.walk(build):
        dirs[:] = [d for d in dirs if d not in ("Testing",)]
        for f in files:
            p = os.path.join(root, f)
            if f.endswith(".a"):
                libs.append(p)
            elif f.endswith(".o") and "/tests/" not in p and "fuzz" not in p:
                objs.append(p)
    lib_defs = {}  # symbol -> defining "lib.a:member.o"
    refs = {}  # symbol -> set of objects that reference it
    for lib in libs:
        for where, kind, sym in nm(lib):
            if kind == "D":
                lib_defs.setdefault(sym, where)
            else:
                refs.setdefault(sym, set()).add(where)
    # The programs' own objects (those not archived into a library).
    archived = set()
    for lib in libs:
        members = subprocess.run(["ar", "t", lib], capture_output=True, text=True).stdout.split()
        archived.update(members)
    for o in objs:
        if os.path.basename(o) in archived:
            continue
        for where, kind, sym in nm(o):
            if kind == "U":
                refs.setdefault(sym, set()).add(where)
    # Tests and fuzzers use library functions too: those uses count.
    for root, dirs, files in os.walk(build):
        for f in files:
            p = os.path.join(root, f)
            if f.endswith(".o") and ("/tests/" in p or "fuzz" in p):
                for where, kind, sym in nm(p):
                    if kind == "U":
                        refs.setdefault(sym, set()).add("test:" + where)
    # The fuzzers are built only with clang: their sources count as users.
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests")
    test_text = []
    for root, dirs, files in os.walk(src):
        for f in files:
            if f.endswith(".c"):
                with open(os.path.join(root, f), errors="replace") as fh:
                    test_text.append(fh.read())
    test_text = "\n".join(test_text)
    problems = []
    for sym, where in sorted(lib_defs.items()):
        if sym in ENTRY or sym.startswith("__"):
            continue
        if not sym.startswith(PREFIXES):
            problems.append(f"{where}: {sym}: exported without a project prefix ({', '.join(PREFIXES)})")
        users = {r for r in refs.get(sym, set()) if r != where}
        if not users and not re.search(r"\b%s\b" % re.escape(sym), test_text):
            problems.append(f"{where}: {sym}: exported but used by no other object (make it static, or remove it)")
    for p in problems:
        print(p)
    print(f"exports: {len(lib_defs)} checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

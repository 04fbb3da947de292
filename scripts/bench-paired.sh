#!/bin/bash
# Two builds' `mini-sandbox bench`, alternating whole runs, each against a
# mini-sandboxd of its own started here and stopped after its run, so that
# whatever else the machine does falls on both alike.  Prints one line per
# run: the p50 of each row and the ratios that have targets
# (docs/performance.md).
#
#   scripts/bench-paired.sh BASE_BIN NEW_BIN WORKSPACE [ROUNDS] [N]
#
# BASE_BIN and NEW_BIN are build/bin directories; WORKSPACE is where the
# commands run (as root: a directory owned by an unprivileged user, which
# the daemon requires).  ROUNDS pairs (default 3) of `bench -n N` (default
# 300).  Figures only; the raw outputs stay in a temporary directory that
# the last line names.  docs/performance.md quotes it.
set -euo pipefail
if (( $# < 3 )); then
    sed -n '2,14p' "$0" >&2
    exit 2
fi
base=$(cd "$1" && pwd) new=$(cd "$2" && pwd) ws=$3 rounds=${4:-3} n=${5:-300}
out=$(mktemp -d "${TMPDIR:-/tmp}/bench-paired.XXXXXX")
pid= d=
# Interrupted: the daemon of the run under way and its directory go too
# (the raw outputs stay).
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; [[ -n $pid ]] && wait "$pid" 2>/dev/null; [[ -n $d ]] && rm -rf "$d"' EXIT
for r in $(seq "$rounds"); do
    for name in base new; do
        bin=$base
        [[ $name == new ]] && bin=$new
        d=$(mktemp -d "${TMPDIR:-/tmp}/bench-paired-d.XXXXXX")
        "$bin/mini-sandboxd" --socket "$d/s" --state-dir "$d/st" --foreground 2>"$d/log" &
        pid=$!
        for _ in $(seq 100); do [[ -S $d/s ]] && break; sleep 0.1; done
        (cd "$ws" && "$bin/mini-sandbox" bench --socket "$d/s" --profile strict -n "$n") >"$out/$name.$r.txt" 2>&1 || true
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        rm -rf "$d"
        pid= d=
    done
done
python3 - "$out" <<'PY'
import glob, os, re, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.txt")):
    t = open(f).read()
    def p50(row):
        m = re.search(r"^" + re.escape(row) + r"\s+([\d.]+)", t, re.M)
        return m.group(1) if m else "-"
    def ratio(label):
        m = re.search(re.escape(label) + r"\s+([\d.]+)", t)
        return m.group(1) if m else "-"
    def same(label):  # the figure against bwrap running the same sh -c
        m = re.search(re.escape(label) + r"\s+[\d.]+ \(([\d.]+) against", t)
        return m.group(1) if m else "-"
    print(f"{os.path.basename(f):11s} clone {p50('clone, 7 new ns')} sandbox {p50('sandbox')} "
          f"b2b {p50('back to back')} run {p50('run, daemon')} private {p50('run, private')} "
          f"bwrap {p50('bwrap')} | b2b/clone {ratio('back to back / clone p50:')} "
          f"tput {ratio('the rest (sandbox / clone):')} run/bwrap {ratio('run, daemon / bwrap p50:')} "
          f"private/bwrap {ratio('run, private / bwrap p50:')} "
          f"(sh -c: {same('run, daemon / bwrap p50:')}, {same('run, private / bwrap p50:')}) sandbox/bare {ratio('sandbox / bare p50:')} "
          f"bwrap/sandbox {ratio('bwrap / sandbox p50:')}")
PY
echo "raw outputs: $out"

#!/bin/bash
# The CPU one sandboxed command costs at concurrency 8: the whole
# machine's CPU time from /proc/stat (user, nice, system, irq, softirq;
# steal shown apart) while tests/bench/load.py runs 8 clients x N
# commands against a mini-sandboxd of its own, divided by the commands.
# It includes the Python client and `sh -c echo`, alike for any build.
# The daemon's own share (its loop, not the sandboxes it clones) is
# printed apart, from /proc/PID/stat: it varies less from run to run.
#
#   scripts/cpu-per-command.sh BIN WORKSPACE [N]
#
# BIN is a build/bin directory; WORKSPACE as for scripts/bench-paired.sh.
# Run two builds in turn to compare them.  docs/performance.md
# quotes it.
set -euo pipefail
if (( $# < 2 )); then
    sed -n '2,12p' "$0" >&2
    exit 2
fi
bin=$(cd "$1" && pwd) ws=$2 n=${3:-200}
src=$(cd "$(dirname "$0")/.." && pwd)
d=$(mktemp -d "${TMPDIR:-/tmp}/cpu-per-command.XXXXXX")
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$d"' EXIT
(cd "$ws" && exec "$bin/mini-sandboxd" --socket "$d/s" --state-dir "$d/st" --foreground 2>"$d/log") &
pid=$!
for _ in $(seq 100); do [[ -S $d/s ]] && break; sleep 0.1; done
python3 "$src/tests/bench/load.py" --socket "$d/s" --profile strict 1x5 >/dev/null 2>&1 # warm up
dcpu() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
d1=$(dcpu)
read -r _ u1 n1 s1 _ _ q1 sq1 st1 _ </proc/stat
python3 "$src/tests/bench/load.py" --socket "$d/s" --profile strict "8x$n" >"$d/out" 2>&1
read -r _ u2 n2 s2 _ _ q2 sq2 st2 _ </proc/stat
d2=$(dcpu)
busy=$(((u2 + n2 + s2 + q2 + sq2) - (u1 + n1 + s1 + q1 + sq1)))
steal=$((st2 - st1))
rps=$(grep -o '"runs_per_s":[0-9.]*' "$d/out" | cut -d: -f2)
awk -v b="$busy" -v st="$steal" -v dd=$((d2 - d1)) -v hz="$(getconf CLK_TCK)" -v c=$((8 * n)) -v r="${rps:-?}" \
    'BEGIN { printf "cpu %.2f ms/command (the daemon loop %.3f), steal %.2f ms/command, %s runs/s\n", b * 1000 / hz / c, dd * 1000 / hz / c, st * 1000 / hz / c, r }'

#!/bin/bash
# Benchmark of `mini inspect` (label bench; not in CI's default run):
# a generated batch folder of BENCH_INSPECT_N (default 1000) trajectories
# of 8 steps each (~10 KB each, a summary.json with verify results).
# Prints, as the median of BENCH_RUNS (default 5) runs each:
#   - list: `mini inspect --list DIR` (find, read and parse every file for
#     its summary, the overview table): what the folder view costs before
#     its first screen;
#   - baseline: `cat` of the same files (reading them, nothing else), in
#     the same run, and the ratio list / baseline;
#   - text and HTML: the whole folder rendered (--text, --html).
# Figures only: no thresholds.  Fails only when mini inspect fails.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
N=${BENCH_INSPECT_N:-1000}
RUNS=${BENCH_RUNS:-5}
D=$T/batch
python3 "$MINI_SOURCE_DIR/tests/integration/inspect_fixtures.py" "$D" --many "$N" >/dev/null
bytes=$(du -sb "$D" | cut -f1)
log "# $N trajectories, $((bytes / 1024)) KiB in all"

# median_ms CMD...: the median wall time of RUNS runs, in ms.
median_ms() {
    local i s e times=()
    for ((i = 0; i < RUNS; i++)); do
        s=$(now_ms)
        "$@" >/dev/null 2>"$T/.err" || { fail "run: $*" "$(cat "$T/.err")"; return 1; }
        e=$(now_ms)
        times+=($((e - s)))
    done
    printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((RUNS + 1) / 2))p"
}
cat_all() { find "$D" -name '*.traj.json' -exec cat {} + ; }

list=$(median_ms "$MINI_BIN/mini" inspect --list "$D")
base=$(median_ms cat_all)
text=$(median_ms "$MINI_BIN/mini" inspect --text "$D")
html=$(median_ms "$MINI_BIN/mini" inspect --html "$T/r.html" "$D")
rows=$("$MINI_BIN/mini" inspect --list "$D" | tail -n +2 | grep -c .)
check "the list has a row per trajectory ($rows)" test "$rows" = "$N"
log ""
log "mini inspect, $N trajectories (median of $RUNS runs)"
printf '  %-34s %8s ms\n' "list (--list: the folder view)" "$list" "baseline: cat of every file" "$base" \
    "whole folder as text (--text)" "$text" "whole folder as HTML (--html)" "$html"
awk -v a="$list" -v b="$base" -v n="$N" 'BEGIN { printf "  list / baseline: %.1fx; list: %.3f ms per trajectory\n", (b > 0 ? a / b : 0), a / n }'
log "  HTML report: $(( $(stat -c %s "$T/r.html") / 1024 )) KiB"
finish

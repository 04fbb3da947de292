#!/bin/bash
# What a busy mount table costs the daemon: `mini-sandbox bench` on a host
# with many mounts, first with the table still, then while a loop mounts
# and unmounts a tmpfs outside every bind (as a container host's runtime
# does).  Each change makes the daemon read /proc/self/mountinfo again
# (sandbox/daemon/mounts.c), and discards a pooled sandbox that copied
# the table while it changed; this measures what that costs at the
# table's size, for one session (bench) and for eight
# (tests/bench/load.py 8x40, a session per client).
#
#   scripts/mount-churn.sh BIN[:BIN2...] WORKSPACE [MOUNTS] [N] [PAUSE]
#
# BIN is a build/bin directory (several, separated by ':', are measured in
# turn in each phase, each against a daemon of its own, so that builds can
# be compared under the same table and the same loop); WORKSPACE as for
# bench-paired.sh; PAUSE (default 0.02) the seconds between a pass of the
# loop and the next (the rate it reached is printed).  Root only:
# everything runs in a mount namespace of its own (unshare -m), so the
# MOUNTS (default 2000) tmpfs mounts and the churn never reach the host's
# table.  Prints the mountinfo size, the time of one read of it, and the
# figures of each build in each phase.  docs/performance.md quotes
# it.
set -euo pipefail
if (( $# < 2 )) || (( EUID != 0 )); then
    sed -n '2,22p' "$0" >&2
    exit 2
fi
bins=
IFS=: read -ra dirs <<<"$1"
for b in "${dirs[@]}"; do bins+="$(cd "$b" && pwd):"; done
ws=$2 mounts=${3:-2000} n=${4:-300} pause=${5:-0.02}
load=$(cd "$(dirname "$0")/../tests/bench" && pwd)/load.py
exec unshare -m --propagation private bash -s "${bins%:}" "$ws" "$mounts" "$n" "$load" "$pause" <<'INNER'
set -euo pipefail
IFS=: read -ra bins <<<"$1"
ws=$2 mounts=$3 n=$4 load=$5 pause=$6
d=$(mktemp -d "${TMPDIR:-/tmp}/mount-churn.XXXXXX")
pid= churn=
trap '[[ -n $churn ]] && kill "$churn" 2>/dev/null; [[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null; umount -R "$d/many" 2>/dev/null; umount "$d/churn" 2>/dev/null; rm -rf "$d"' EXIT
mkdir -p "$d/many" "$d/churn"
mount -t tmpfs many "$d/many"
for i in $(seq "$mounts"); do
    mkdir "$d/many/$i"
    mount -t tmpfs -o size=4k "m$i" "$d/many/$i"
done
lines=$(wc -l </proc/self/mountinfo) bytes=$(wc -c </proc/self/mountinfo)
read_ms=$(python3 - <<'PY'
import time
t = time.perf_counter()
for _ in range(200):
    with open("/proc/self/mountinfo", "rb") as f:
        f.read()
print(f"{(time.perf_counter() - t) / 200 * 1e3:.3f}")
PY
)
echo "mount table: $lines mounts, $bytes bytes; one read of /proc/self/mountinfo: $read_ms ms"
# Each build's figures against a daemon of its own, started and stopped here.
figures() {
    local bin=$1
    rm -rf "$d/st" "$d/s"
    "$bin/mini-sandboxd" --socket "$d/s" --state-dir "$d/st" --foreground 2>"$d/log" &
    pid=$!
    for _ in $(seq 100); do [[ -S $d/s ]] && break; sleep 0.1; done
    echo "$bin:"
    (cd "$ws" && "$bin/mini-sandbox" bench --socket "$d/s" --profile strict -n "$n") |
        grep -E '^(sandbox|back to back|clone, 7 new ns) |back to back / clone|the rest \(sandbox / clone\)'
    echo "eight sessions (load.py 8x40):"
    python3 "$load" --socket "$d/s" 8x40 | grep -E 'runs/s|8 x 40' || true
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    pid=
}
echo "--- the table still"
for b in "${bins[@]}"; do figures "$b"; done
# Each pass is two changes: a mount and an unmount.
( while :; do mount -t tmpfs churn "$d/churn"; umount "$d/churn"; echo >>"$d/passes"; sleep "$pause"; done ) &
churn=$!
sleep 0.5
t0=$(date +%s.%N) p0=$(wc -l <"$d/passes")
echo "--- while a tmpfs is mounted and unmounted outside the binds"
for b in "${bins[@]}"; do figures "$b"; done
p1=$(wc -l <"$d/passes") t1=$(date +%s.%N)
kill "$churn"
wait "$churn" 2>/dev/null || true
churn=
echo "the loop made $(python3 -c "print(f'{2 * ($p1 - $p0) / ($t1 - $t0):.1f}')") changes a second"
INNER

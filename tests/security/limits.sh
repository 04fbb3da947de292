#!/bin/bash
# Resource limits end to end, through mini-sandboxd: a fork bomb, a memory
# hog, a file past the size limit, a full /tmp, a CPU spinner, and 200
# commands that must leave nothing behind (a gigabyte of output is
# output_flood.sh's).  As root the daemon uses cgroup v1 here (memory,
# pids); rootless it falls back to rlimits, and the checks expect what that
# gives.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
start_daemon
SBX_PROFILE=strict
TAG=$RUN_TAG

# A strict profile with small limits, so that the checks are quick.
PROF=$T/small.json
python3 - "$MINI_SOURCE_DIR/profiles/strict.json" "$PROF" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["name"] = "small"
p["limits"].update({"timeout_s": 20, "memory_mb": 256, "pids": 64, "cpu_s": 2, "file_size_mb": 16})
for t in p["filesystem"]["tmpfs"]:
    if t["path"] == "/tmp":
        t["size_mb"] = 8
json.dump(p, open(sys.argv[2], "w"))
PY
small() { bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$WS" --profile "$PROF" "$@" </dev/null; }

# ---- fork bomb: stopped at the pids limit, the host stays responsive -------
small --timeout 8 -- 'b(){ b | b & }; b; sleep 30' >"$T/bomb.out" 2>&1 &
bomb=$!
BG_PIDS+=("$bomb")
sleep 2
t0=$(now_ms)
run sbx -- 'echo responsive'
t1=$(now_ms)
if [[ $RC == 0 && $OUT == responsive ]]; then
    pass "a fork bomb runs while another command still completes ($((t1 - t0)) ms)"
else
    fail "a fork bomb runs while another command still completes"
fi
brc=0
wait_pid "$bomb" 30 || brc=$?
check "the fork bomb is ended by its timeout (status 124)" test "$brc" = 124
check "no process of the fork bomb is left" wait_until 10 no_process 'b | b'

# ---- memory hog ---------------------------------------------------------------
run small -- 'python3 -c "b = bytearray(600 * 1024 * 1024); print(len(b))"'
if is_root; then
    if [[ $RC == 137 && $ERR == *"stopped: memory"* ]]; then pass "a memory hog is OOM-killed and reported (cgroup)"
    else fail "a memory hog is OOM-killed and reported (cgroup)" "expected 137 and 'stopped: memory'"; fi
else
    if [[ $RC != 0 && $OUT == *MemoryError* ]]; then pass "a memory hog cannot allocate past RLIMIT_AS (rootless)"
    else fail "a memory hog cannot allocate past RLIMIT_AS (rootless)"; fi
fi

# ---- file size ----------------------------------------------------------------
run small -- "head -c 32M /dev/zero > $WS/big-$TAG"
if [[ $RC == $((128 + 25)) && $ERR == *"stopped: file_size"* ]]; then pass "writing past the file-size limit gets SIGXFSZ"
else fail "writing past the file-size limit gets SIGXFSZ" "expected status 153 and 'stopped: file_size'"; fi
size=$(stat -c %s "$WS/big-$TAG" 2>/dev/null || echo 0)
check "the file stopped at 16 MiB" test "$size" -le $((16 * 1024 * 1024))
rm -f "$WS/big-$TAG"

# ---- /tmp is a bounded tmpfs ------------------------------------------------------
run small -- 'head -c 12M /dev/zero > /tmp/fill; echo rc=$?; du -k /tmp/fill | cut -f1'
kb=$(printf '%s\n' "$OUT" | tail -n 1)
if [[ $OUT == *rc=1* && $kb -le 8192 && ( $ERR == *"No space left"* || $OUT == *"No space left"* ) ]]; then
    pass "filling /tmp stops at the tmpfs size (${kb} KiB)"
else
    fail "filling /tmp stops at the tmpfs size"
fi

# ---- CPU time -----------------------------------------------------------------------
t0=$(now_ms)
run small -- 'while :; do :; done'
t1=$(now_ms)
if [[ $RC == $((128 + 24)) && $ERR == *"stopped: cpu"* ]]; then
    pass "a CPU spinner is stopped at its CPU-time limit after $((t1 - t0)) ms"
else
    fail "a CPU spinner is stopped at its CPU-time limit" "expected status 152 and 'stopped: cpu'"
fi

# ---- every process of a command is in the command's own cgroups (host side) -------
# The sandbox joins its v1 groups by writing "0" to `tasks`, which moves
# only the writing thread: check on the host that the whole tree, init
# and the command's children and threads, landed in them, in every
# hierarchy that limits it.
if is_root; then
    small --timeout 15 -- "sleep 47.$TAG & python3 -c 'import threading, time; t = threading.Thread(target=time.sleep, args=(47,)); t.start(); t.join()' & wait" \
        >/dev/null 2>&1 &
    BG_PIDS+=($!)
    tree_in_groups() {
        local sl sh init p tid line bad=0 n=0
        sl=$(pids_by_cmdline "sleep 47.$TAG")
        [[ -n $sl ]] || return 1
        sh=$(ps -o ppid= -p "$sl" | tr -d ' ')
        init=$(ps -o ppid= -p "$sh" | tr -d ' ')
        # sh's children: the sleep and the python with its second thread
        for p in $init $sh $(pgrep -P "$sh"); do
            for tid in /proc/"$p"/task/*; do
                [[ -r $tid/cgroup ]] || continue
                for h in memory pids; do
                    line=$(grep -E "^[0-9]+:([^:]*,)?$h(,[^:]*)?:" "$tid/cgroup")
                    n=$((n + 1))
                    [[ $line == *"/mini-sandboxd-$DAEMON_PID/c-"* ]] || bad=$((bad + 1))
                done
            done
        done
        # init, sh, sleep and python's two threads, in two hierarchies
        [[ $n -ge 10 && $bad == 0 ]]
    }
    check "the command, its children, their threads and init are all in the command's memory and pids cgroups" \
        wait_until 10 tree_in_groups
    pkill -f "^sleep 47.$TAG\$" || true
    pkill -f "^python3 -c import threading, time" || true
fi

# ---- 200 commands leave nothing behind ------------------------------------------------
count_cgroups() {
    local n=0 d
    for d in /sys/fs/cgroup/*/mini-sandboxd-"$DAEMON_PID"; do
        [[ -d $d ]] && n=$((n + $(find "$d" -mindepth 1 -type d | wc -l)))
    done
    printf '%s' "$n"
}
count_inits() { pgrep -P "$DAEMON_PID" -c 2>/dev/null || true; }
no_inits() { [[ $(count_inits) == 0 ]]; }
no_cgroups() { [[ $(count_cgroups) == 0 ]]; }
# The host's mounts this daemon could leave: any under this test's temp
# dir (the state directory with its root, the workspace), and any at a
# path a sandbox mounts or binds for itself (/, /proc, /dev, its tmpfs,
# its binds, its hidden paths), had a setup step reached the host's mount
# namespace.  Tests running beside this one mount only under temp dirs
# of their own, so this needs no exclusive run (it had RUN_SERIAL, which
# made CI wait about two minutes for it alone).
our_mounts() {
    python3 - "$T" "$PROF" <<'PY'
import json, sys
t, fs = sys.argv[1], json.load(open(sys.argv[2]))["filesystem"]
own = {"/", "/proc", "/dev", "/dev/pts", "/dev/shm", "/dev/mqueue"}
path = lambda x: x if isinstance(x, str) else x["path"]
own |= {path(x) for x in fs["tmpfs"] + fs["binds"] + fs["hide"]}
for line in open("/proc/self/mountinfo"):
    p = line.split()[4]
    if p in own or p == t or p.startswith(t + "/"):
        print(line, end="")
PY
}
mounts_before=$(our_mounts)
bad=0
for i in $(seq 200); do
    out=$(sbx -- "echo run-$i" 2>/dev/null) || bad=$((bad + 1))
    [[ $out == "run-$i" ]] || bad=$((bad + 1))
done
check "200 commands all ran correctly" test "$bad" = 0
# Each `run` says exec.last, so the daemon parks the last session with a
# sandbox prepared for 10 s (PARK_MS, docs/sandbox-lifecycle.md, "The parked
# session"); what must be gone is gone once that has expired.
check "no process of the daemon's is left after 200 commands" wait_until 20 no_inits
mounts_after=$(our_mounts)
check "no mount appeared on the host under the temp dir or at a sandbox's paths" test "$mounts_after" = "$mounts_before"
[[ $mounts_after == "$mounts_before" ]] || diff <(printf '%s\n' "$mounts_before") <(printf '%s\n' "$mounts_after") >&2 || true
if is_root; then
    check "no command cgroup is left after 200 commands" wait_until 20 no_cgroups
fi
check "nothing is left under the daemon's state directory but its mount point" \
    test "$(find "$T/state" -mindepth 1 -maxdepth 1 ! -name root ! -name sessions | wc -l)" = 0

finish

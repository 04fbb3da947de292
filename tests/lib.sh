# tests/lib.sh: shared helpers for the shell integration and security tests.
# Source it, then call mini_test_init:
#
#   . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
#   mini_test_init "$@"          # rootless re-exec, temp dir, EXIT trap
#   start_daemon                 # mini-sandboxd on $SOCK, waits for ping
#   SBX_PROFILE=strict
#   expect_rc  "false exits 1" 1 sbx -- false
#   expect_out "no caps" "CapEff:	0000000000000000" sbx -- grep CapEff /proc/self/status
#   expect_denied "unshare -U" 'unshare -U true'
#   finish                       # "N passed, N failed"; non-zero on failure
#
# Environment (ctest sets the first three through mini_sh_test):
#   MINI_BIN, MINI_BUILD_DIR, MINI_SOURCE_DIR
#   MINI_TEST_ROOTLESS=1   when run as root, re-run the whole script as an
#                          unprivileged user (MINI_TEST_UID, default 65534);
#                          exit 77 (skip) when that cannot be done.
#   MINI_TEST_WS_UID, MINI_TEST_WS_GID  as root, the owner of $WS and of
#                          every workspace made with mkws (default 65534)
#   MINI_TEST_CMD_TIMEOUT  host-side bound on one client call (default 60 s)
#   MINI_TEST_KEEP=1       keep the temp dir (printed) for debugging
#   MINI_TEST_VERBOSE=1    show output of passing checks too
#
# Every check runs commands with bounded waits and never aborts the script:
# a failing check is counted and the run goes on.  The script is
# `set -euo pipefail`-clean: helpers never return non-zero by accident.

set -euo pipefail

MINI_SKIP=77
PASSED=0
FAILED=0
SKIPPED=0
FAILED_NAMES=()
DAEMON_PID=
DAEMON_LOG=
BG_PIDS=()
CLEANUP_PATHS=()
CLEANUP_CMDS=()
SBX_PROFILE=${SBX_PROFILE:-}
RC=0
OUT=
ERR=
T=
WS=
SOCK=
PROBE=
CMD_TIMEOUT=${MINI_TEST_CMD_TIMEOUT:-60}

# ---- small utilities ---------------------------------------------------

log() { printf '%s\n' "$*"; }
is_root() { [[ $(id -u) == 0 ]]; }
have() { command -v "$1" >/dev/null 2>&1; }
# A token unique to this run, for sleep durations and marker names, so
# that parallel test runs (root and rootless) never see each other.
RUN_TAG=$(( (RANDOM << 15 | RANDOM) % 900000 + 100000 ))
# uniq_sleep 31 -> "31.<digits>": a sleep argument no other run uses.
uniq_sleep() { printf '%s.%s' "$1" "$RUN_TAG"; }
now_ms() { local s; s=$(date +%s%N); printf '%s' $(( s / 1000000 )); }

skip_all() {
    log "SKIP: $*"
    exit "$MINI_SKIP"
}

# ---- rootless re-exec --------------------------------------------------

mini_setpriv_cmd() {
    local uid=${MINI_TEST_UID:-65534} gid=${MINI_TEST_GID:-65534}
    SETPRIV=(setpriv --reuid="$uid" --regid="$gid" --clear-groups
             --inh-caps=-all --bounding-set=-all)
}

# Re-run "$0" as the unprivileged user with a temp dir it owns.  Never
# returns: exits with the child's status (77 when it cannot be done).
mini_reexec_rootless() {
    local uid=${MINI_TEST_UID:-65534} gid=${MINI_TEST_GID:-65534}
    have setpriv || skip_all "rootless: setpriv (util-linux) is not installed"
    have unshare || skip_all "rootless: unshare (util-linux) is not installed"
    mini_setpriv_cmd
    "${SETPRIV[@]}" true 2>/dev/null ||
        skip_all "rootless: cannot drop privileges to uid $uid with setpriv"
    "${SETPRIV[@]}" unshare -U true 2>/dev/null ||
        skip_all "rootless: unprivileged user namespaces are unavailable (unshare -U fails as uid $uid)"
    local script
    script=$(readlink -f "$0")
    local b
    for b in "$script" "$MINI_BIN/mini-sandbox" "$MINI_BIN/mini-sandboxd"; do
        [[ -e $b ]] || continue   # the child reports missing binaries
        "${SETPRIV[@]}" test -r "$b" 2>/dev/null ||
            skip_all "rootless: uid $uid cannot read $b (build in a directory every user can traverse)"
    done
    local t
    t=$(mktemp -d /tmp/mini-rootless.XXXXXX)
    mkdir "$t/home"
    chown -R "$uid:$gid" "$t"
    local rc=0
    # The child gets a clean PATH (root's may point into /root), its own
    # HOME, no XDG_RUNTIME_DIR (it would be root's).
    "${SETPRIV[@]}" env -u XDG_RUNTIME_DIR -u TMPDIR \
        HOME="$t/home" USER=nobody LOGNAME=nobody \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        MINI_TEST_TMP="$t" MINI_TEST_ROOTLESS_CHILD=1 \
        bash "$script" "$@" || rc=$?
    if [[ ${MINI_TEST_KEEP:-0} != 1 ]]; then
        rm -rf "$t"
    fi
    exit "$rc"
}

# ---- setup and cleanup -------------------------------------------------

mini_test_init() {
    : "${MINI_BIN:?MINI_BIN is not set: run this test through ctest (or export MINI_BIN=<build>/bin)}"
    MINI_SOURCE_DIR=${MINI_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
    if [[ ${MINI_TEST_ROOTLESS:-0} == 1 ]]; then
        if is_root; then
            mini_reexec_rootless "$@"
        fi
        unshare -U true 2>/dev/null ||
            skip_all "rootless: unprivileged user namespaces are unavailable (unshare -U fails)"
    fi
    local b
    for b in mini-sandbox mini-sandboxd; do
        if [[ ! -x $MINI_BIN/$b ]]; then
            log "FAIL: $MINI_BIN/$b is not built"
            log "0 passed, 1 failed"
            exit 1
        fi
    done
    if [[ -n ${MINI_TEST_TMP:-} ]]; then
        T=$MINI_TEST_TMP
    else
        T=$(mktemp -d "${TMPDIR:-/tmp}/mini-test.XXXXXX")
    fi
    T=$(cd "$T" && pwd -P)
    WS=$T/ws
    SOCK=$T/sock
    # As root the workspace belongs to an unprivileged user (mkws), who
    # must be able to reach it: the temp dir is traversable (not listable),
    # and the daemon's socket moves to a private directory of its own.
    if is_root; then
        chmod 0711 "$T"
        mkdir -m 0700 "$T/run"
        SOCK=$T/run/sock
    fi
    mkws "$WS"
    mkdir -m 0700 "$T/state"
    export MINI_TEST_RUN_ID="$RUN_TAG-$$"
    trap mini_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    log "# $(basename "$0") as uid $(id -u) ($(id -un 2>/dev/null || echo '?')), temp dir $T"
}

# mkws DIR...: make DIR a workspace.  As root, DIR goes to an unprivileged
# owner (a user's project; root's own checkout is security_root_checkout's),
# MINI_TEST_WS_UID:MINI_TEST_WS_GID (default nobody, 65534:65534), and the
# directories above it that we made (the temp dir) become traversable by
# it.  Rootless, DIR is simply created.
mkws() {
    local d
    for d in "$@"; do
        mkdir -p "$d"
        if is_root; then
            chown "${MINI_TEST_WS_UID:-65534}:${MINI_TEST_WS_GID:-65534}" "$d"
        fi
    done
}

# Remember a host path to delete at exit (markers, and files an attack
# might have managed to create).
cleanup_path() { CLEANUP_PATHS+=("$@"); }
cleanup_cmd() { CLEANUP_CMDS+=("$1"); }

# Processes (ours: same run id in the environment) whose program is one of
# ours: left-over daemons or clients.
mini_leftover_pids() {
    local d pid exe
    for d in /proc/[0-9]*; do
        pid=${d#/proc/}
        [[ $pid == "$$" ]] && continue
        exe=$(readlink "$d/exe" 2>/dev/null) || continue
        case ${exe##*/} in
            mini-sandboxd|mini-sandbox) ;;
            *) continue ;;
        esac
        if { tr '\0' '\n' <"$d/environ"; } 2>/dev/null | grep -qxF "MINI_TEST_RUN_ID=$MINI_TEST_RUN_ID"; then
            printf '%s\n' "$pid"
        fi
    done
}

# Whether process $2 descends from process $1 (by PPid, on the host).
descends_from() {
    local p=$2 n=0
    while [[ -n $p && $p != 0 && $p != 1 ]] && ((n++ < 64)); do
        [[ $p == "$1" ]] && return 0
        p=$(awk '/^PPid:/ { print $2 }' "/proc/$p/status" 2>/dev/null)
    done
    return 1
}

# Sandboxes (mini-sandbox-init, a daemon's child) of this run's daemons:
# scoped so that tests running beside each other do not see each other's.
our_sandbox_pids() {
    local daemons pid ppid
    daemons=" $(mini_leftover_pids | tr '\n' ' ') "
    # Its command line carries its limits (mini-sandbox-init cpu=... mode=...).
    for pid in $(pgrep -f '^mini-sandbox-init( |$)'); do
        ppid=$(awk '/^PPid:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || continue
        [[ $daemons == *" $ppid "* ]] && printf '%s\n' "$pid"
    done
    return 0
}
no_sandbox_of_ours() { [[ -z $(our_sandbox_pids) ]]; }

mini_cleanup() {
    local rc=$?
    set +e
    trap - EXIT INT TERM
    local p j
    # Only background jobs of this shell that still run: a pid reaped long
    # ago may belong to someone else's process by now.
    local live=" $(jobs -p | tr '\n' ' ') "
    for p in "${BG_PIDS[@]}"; do
        [[ $live == *" $p "* ]] && kill -KILL "$p" 2>/dev/null
    done
    for j in $(jobs -p); do
        kill -KILL "$j" 2>/dev/null
    done
    if [[ -n $DAEMON_PID ]]; then
        stop_daemon >/dev/null 2>&1
    fi
    for p in $(mini_leftover_pids); do
        kill -KILL "$p" 2>/dev/null
    done
    local c
    for c in "${CLEANUP_CMDS[@]}"; do
        eval "$c" >/dev/null 2>&1
    done
    for p in "${CLEANUP_PATHS[@]}"; do
        rm -rf -- "$p" 2>/dev/null
    done
    if [[ -n $T && -d $T ]]; then
        if [[ ${MINI_TEST_KEEP:-0} == 1 ]]; then
            log "# kept $T"
        else
            chmod -R u+rwX "$T" 2>/dev/null
            rm -rf -- "$T" 2>/dev/null
        fi
    fi
    exit "$rc"
}

# ---- bounded waits -----------------------------------------------------

# wait_until SECONDS CMD...: poll CMD every 0.1 s; 0 once it succeeds,
# 1 when the time is up.
wait_until() {
    local secs=$1
    shift
    local deadline=$(( $(now_ms) + secs * 1000 ))
    while :; do
        if "$@"; then
            return 0
        fi
        (( $(now_ms) >= deadline )) && return 1
        sleep 0.1
    done
}

# A child of this shell has exited (zombie or gone).
pid_exited() {
    local st
    st=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
    st=${st##*) }
    [[ ${st%% *} == Z ]]
}

# wait_pid PID SECONDS: wait for our child PID at most SECONDS; its exit
# status, or 255 (after SIGKILL) when it did not end in time.
wait_pid() {
    local pid=$1 secs=$2 rc=0
    if ! wait_until "$secs" pid_exited "$pid"; then
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        return 255
    fi
    wait "$pid" 2>/dev/null || rc=$?
    return "$rc"
}

# bounded CMD...: run CMD with the host-side time limit.  A run that hits
# the limit returns 254 (never confused with the sandbox's own 124).
bounded() {
    local start rc=0
    start=$(now_ms)
    timeout -k 5 "$CMD_TIMEOUT" "$@" || rc=$?
    if (( $(now_ms) - start >= CMD_TIMEOUT * 1000 )); then
        printf 'lib.sh: host-side timeout: %s did not finish in %s s\n' "$1" "$CMD_TIMEOUT" >&2
        rc=254
    fi
    return "$rc"
}

# pids of host processes whose command line is exactly the given string.
pids_by_cmdline() {
    pgrep -f "^$(printf '%s' "$1" | sed 's/[.[\*^$]/\\&/g')\$" || true
}
no_process() { [[ -z $(pids_by_cmdline "$1") ]]; }
has_process() { [[ -n $(pids_by_cmdline "$1") ]]; }

# ---- the daemon and the client -----------------------------------------

mini_profiles_args() {
    if [[ -f $MINI_SOURCE_DIR/profiles/strict.json ]]; then
        printf '%s\n' --profiles "$MINI_SOURCE_DIR/profiles"
    fi
}

ping_ok() {
    timeout 5 "$MINI_BIN/mini-sandbox" ping --socket "$SOCK" >/dev/null 2>&1 </dev/null
}

# caches_off: every daemon of this run has its caches off
# (MINI_SANDBOXD_CACHES=off, which start_daemon's daemons and the private
# ones mini-sandbox and mini start all read; .ci/run's second pass):
# no prepared sandboxes, parked session, template of the root, id mapping
# ahead, seccomp program or probe cache.  skip_if_caches_off WHY: a
# script that checks a cache's own behaviour has nothing to check then.
caches_off() { [[ ${MINI_SANDBOXD_CACHES:-} == off ]]; }
skip_if_caches_off() {
    if caches_off; then
        skip_all "the daemon's caches are off (MINI_SANDBOXD_CACHES=off): $*"
    fi
}

# start_daemon [EXTRA DAEMON ARGS...]: start mini-sandboxd on $SOCK in
# the background and wait (at most 10 s) until it answers ping.  On
# failure the check fails with the daemon's log and the script ends.
start_daemon() {
    local args=()
    mapfile -t args < <(mini_profiles_args)
    DAEMON_LOG=$T/daemon.log
    # DAEMON_WRAPPER: a command the daemon runs under (e.g. one that
    # blocks user namespaces, for the degraded path).  MINI_DAEMON_EXE:
    # another daemon binary than $MINI_BIN's (a second build).
    ${DAEMON_WRAPPER:-} "${MINI_DAEMON_EXE:-$MINI_BIN/mini-sandboxd}" --socket "$SOCK" --state-dir "$T/state" --foreground \
        ${MINI_TEST_LOG_LEVEL:+--log-level "$MINI_TEST_LOG_LEVEL"} "${args[@]}" "$@" \
        >>"$DAEMON_LOG" 2>&1 </dev/null &
    DAEMON_PID=$!
    if wait_until 10 ping_ok; then
        log "# mini-sandboxd running, pid $DAEMON_PID, socket $SOCK"
        return 0
    fi
    local why="did not answer ping within 10 s"
    if pid_exited "$DAEMON_PID"; then
        local st=0
        wait "$DAEMON_PID" || st=$?
        why="exited with status $st"
        DAEMON_PID=
    fi
    fail "start mini-sandboxd" "mini-sandboxd $why; its log:" \
        "$(sed 's/^/    | /' "$DAEMON_LOG" | tail -n 40)"
    finish
}

# stop_daemon: SIGTERM, wait at most 10 s (then SIGKILL); returns the
# daemon's exit status (255 when it had to be killed).
stop_daemon() {
    [[ -n $DAEMON_PID ]] || return 0
    local pid=$DAEMON_PID rc=0
    DAEMON_PID=
    kill -TERM "$pid" 2>/dev/null || true
    wait_pid "$pid" 10 || rc=$?
    return "$rc"
}

show_daemon_log() {
    [[ -n $DAEMON_LOG && -s $DAEMON_LOG ]] || return 0
    log "    daemon log (last 20 lines):"
    tail -n 20 "$DAEMON_LOG" | sed 's/^/    | /'
}

# sbx [RUN OPTIONS] -- COMMAND...: one sandboxed command through our
# daemon, with the workspace $WS and profile $SBX_PROFILE (when set).
# stdin is /dev/null unless SBX_STDIN=keep.
sbx() {
    local prof=()
    [[ -n $SBX_PROFILE ]] && prof=(--profile "$SBX_PROFILE")
    # SBX_IMAGE: every sbx call rooted in this image (the attack suite's
    # image variant, tests/image/attacks_image.sh).
    [[ -n ${SBX_IMAGE:-} ]] && prof+=(--image "$SBX_IMAGE")
    if [[ ${SBX_STDIN:-} == keep ]]; then
        bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$WS" "${prof[@]}" "$@"
    else
        bounded "$MINI_BIN/mini-sandbox" run --socket "$SOCK" --workspace "$WS" "${prof[@]}" "$@" </dev/null
    fi
}

# cli ARGS...: the client with our socket (ping, stats, profiles).
cli() {
    local sub=$1
    shift
    bounded "$MINI_BIN/mini-sandbox" "$sub" --socket "$SOCK" "$@" </dev/null
}

# ---- checks ------------------------------------------------------------

# run CMD...: run CMD, setting RC, OUT (stdout) and ERR (stderr).  Output
# goes through files so a process that keeps a pipe open cannot hang us.
run() {
    RC=0
    "$@" >"$T/.out" 2>"$T/.err" || RC=$?
    OUT=$(tr -d '\0' <"$T/.out")
    ERR=$(tr -d '\0' <"$T/.err")
}

show_run() {
    log "    status: $RC"
    if [[ -n $OUT ]]; then
        log "    stdout:"
        printf '%s\n' "$OUT" | head -n 25 | sed 's/^/    | /'
    fi
    if [[ -n $ERR ]]; then
        log "    stderr:"
        printf '%s\n' "$ERR" | head -n 15 | sed 's/^/    | /'
    fi
}

pass() {
    PASSED=$((PASSED + 1))
    log "ok   - $1"
    if [[ ${MINI_TEST_VERBOSE:-0} == 1 ]]; then show_run; fi
}

# fail NAME [DETAIL...]: count a failure; show the last run's output.
fail() {
    local name=$1
    shift
    FAILED=$((FAILED + 1))
    FAILED_NAMES+=("$name")
    log "FAIL - $name"
    local d
    for d in "$@"; do
        printf '%s\n' "$d" | sed 's/^/    /'
    done
    show_run
}

skip() {
    SKIPPED=$((SKIPPED + 1))
    log "skip - $1: $2"
}

# check NAME COND-CMD...: pass when COND-CMD succeeds (for host-side facts
# that need no output, e.g. `check "socket removed" test ! -e "$SOCK"`).
check() {
    local name=$1
    shift
    RC=0 OUT= ERR=
    if "$@"; then pass "$name"; else fail "$name" "condition failed: $*"; fi
}

contains() { [[ $1 == *"$2"* ]]; }

# expect_rc NAME WANT CMD...: CMD exits with status WANT.
expect_rc() {
    local name=$1 want=$2
    shift 2
    run "$@"
    if [[ $RC == "$want" ]]; then pass "$name"; else fail "$name" "expected status $want, got $RC"; fi
}

# expect_out NAME STRING CMD...: CMD exits 0 and its stdout contains STRING.
expect_out() {
    local name=$1 want=$2
    shift 2
    run "$@"
    if [[ $RC == 0 ]] && contains "$OUT" "$want"; then pass "$name"
    else fail "$name" "expected status 0 and stdout containing: $want"; fi
}

# expect_no_out NAME STRING CMD...: CMD exits 0 and stdout lacks STRING.
expect_no_out() {
    local name=$1 bad=$2
    shift 2
    run "$@"
    if [[ $RC == 0 ]] && ! contains "$OUT" "$bad"; then pass "$name"
    else fail "$name" "expected status 0 and stdout without: $bad"; fi
}

# expect_eq NAME WANT CMD...: CMD exits 0 and stdout (without trailing
# newlines) is exactly WANT.
expect_eq() {
    local name=$1 want=$2
    shift 2
    run "$@"
    if [[ $RC == 0 && $OUT == "$want" ]]; then pass "$name"
    else fail "$name" "expected status 0 and stdout exactly: $want"; fi
}

# expect_refused NAME CMD...: the sandbox refuses: status 125, a message on
# stderr, and the command did not run (it would print SHOULD-NOT-RUN).
expect_refused() {
    local name=$1
    shift
    run "$@"
    if [[ $RC == 125 && -n $ERR ]] && ! contains "$OUT" SHOULD-NOT-RUN; then pass "$name"
    else fail "$name" "expected status 125 with a message on stderr, and no output from the command"; fi
}

# The wrapper for attack snippets: run SNIPPET in a subshell, show what it
# printed, then say whether it worked.  Only a sandbox that ran the command
# to the end prints either verdict.
attack_cmd() {
    printf 'if __o=$( (%s) 2>&1 ); then printf "%%s\\n" "$__o" | head -n 20; echo ATTACK-SUCCEEDED; else printf "%%s\\n" "$__o" | head -n 20; echo ATTACK-FAILED; fi' "$1"
}

# expect_denied NAME SNIPPET [RUN OPTIONS...]: SNIPPET (shell, run inside
# the sandbox) must fail; the check fails when it succeeds, and also when
# the sandbox did not run the command at all.
expect_denied() {
    local name=$1 snippet=$2
    shift 2
    run sbx "$@" -- "$(attack_cmd "$snippet")"
    if [[ $RC == 0 ]] && contains "$OUT" ATTACK-FAILED && ! contains "$OUT" ATTACK-SUCCEEDED; then
        pass "$name"
    elif contains "$OUT" ATTACK-SUCCEEDED; then
        fail "$name" "the attack succeeded: $snippet"
    else
        fail "$name" "the sandboxed command did not run to the end: $snippet"
    fi
}

# expect_allowed NAME SNIPPET [RUN OPTIONS...]: the positive control: SNIPPET
# must succeed inside.
expect_allowed() {
    local name=$1 snippet=$2
    shift 2
    run sbx "$@" -- "$(attack_cmd "$snippet")"
    if [[ $RC == 0 ]] && contains "$OUT" ATTACK-SUCCEEDED; then pass "$name"
    else fail "$name" "expected this to work inside the sandbox: $snippet"; fi
}

# install_probe: copy mini-test-probe into the workspace (the sandbox sees
# the workspace at the same path).
install_probe() {
    PROBE=$WS/.mini-test-probe
    if [[ -x $MINI_BIN/mini-test-probe ]]; then
        cp "$MINI_BIN/mini-test-probe" "$PROBE"
        chmod 0755 "$PROBE"
    else
        PROBE=
    fi
}

# expect_probe NAME MODE [ARGS...]: run the probe in MODE inside the
# sandbox; passes when it ran to the end (PROBE-DONE) and nothing was
# breached.  Run options go in the array SBX_OPTS.
SBX_OPTS=()
expect_probe() {
    local name=$1
    shift
    if [[ -z $PROBE ]]; then
        fail "$name" "mini-test-probe is not built in $MINI_BIN"
        return 0
    fi
    run sbx "${SBX_OPTS[@]}" -- "$PROBE" "$@"
    if [[ $RC == 0 ]] && contains "$OUT" PROBE-DONE && ! contains "$OUT" BREACH; then
        pass "$name"
    elif contains "$OUT" BREACH; then
        fail "$name" "breached: $(printf '%s\n' "$OUT" | grep BREACH | head -n 5)"
    else
        fail "$name" "the probe did not run to the end"
    fi
}

# finish: the summary line, and the exit status.
finish() {
    log ""
    if (( SKIPPED > 0 )); then log "# $SKIPPED skipped"; fi
    if (( FAILED > 0 )); then
        log "# failed checks:"
        local n
        for n in "${FAILED_NAMES[@]}"; do log "#   $n"; done
        show_daemon_log
    fi
    log "$PASSED passed, $FAILED failed"
    if (( FAILED > 0 )); then exit 1; fi
    exit 0
}

# ---- profile facts -----------------------------------------------------

# profile_limit NAME KEY DEFAULT: a limit from profiles/NAME.json, in
# base units (bytes for sizes), or DEFAULT when the file or key is not
# there.  KEY is the start of the key: "pids", "memory".
profile_limit() {
    local f=$MINI_SOURCE_DIR/profiles/$1.json
    if [[ ! -f $f ]] || ! have python3; then
        printf '%s' "$3"
        return 0
    fi
    python3 - "$f" "$2" "$3" <<'PY' 2>/dev/null || printf '%s' "$3"
import json, re, sys
path, key, default = sys.argv[1:4]
lim = json.load(open(path)).get("limits", {})
units = {"": 1, "b": 1, "bytes": 1, "kb": 1 << 10, "k": 1 << 10, "kib": 1 << 10,
         "mb": 1 << 20, "m": 1 << 20, "mib": 1 << 20, "gb": 1 << 30, "g": 1 << 30, "gib": 1 << 30}
for k, v in lim.items():
    if not k.startswith(key):
        continue
    suffix = k[len(key):].lstrip("_").lower()
    if isinstance(v, str):
        m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", v)
        if not m:
            continue
        v, suffix = int(m.group(1)), m.group(2).lower()
    if isinstance(v, (int, float)) and v > 0 and suffix in units:
        print(int(v * units[suffix]), end="")
        sys.exit(0)
print(default, end="")
PY
}

# client_pids STRING: pids of mini-sandbox client processes whose command
# line contains STRING.
client_pids() {
    local p exe
    for p in $(pgrep -f -- "$1" || true); do
        exe=$(readlink "/proc/$p/exe" 2>/dev/null) || continue
        [[ ${exe##*/} == mini-sandbox ]] && printf '%s\n' "$p"
    done
    return 0
}

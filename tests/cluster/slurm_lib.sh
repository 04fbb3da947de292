# shellcheck shell=bash
# slurm_lib.sh: start and stop a throw-away single-node Slurm cluster for
# tests, offline, as root, with every file under one directory.
#
# Source it from a bash test script:
#
#   . tests/cluster/slurm_lib.sh
#   slurm_available || exit 77
#   dir=$(mktemp -d)
#   trap 'slurm_stop; rm -rf "$dir"' EXIT
#   trap 'exit 130' INT TERM
#   slurm_start "$dir" || exit 1          # exports SLURM_CONF=$dir/slurm.conf
#   id=$(sbatch --parsable --wrap 'hostname')
#   slurm_wait_job "$id" 60
#
# Functions:
#   slurm_available        0 when the binaries are installed and we are root;
#                          otherwise says why on stderr and returns 1.
#   slurm_start DIR        munged + slurmctld + slurmd, all state under DIR;
#                          waits until the node is idle (SLURM_START_TIMEOUT,
#                          default 30 s); on failure prints the daemons' logs,
#                          stops what it started and returns non-zero.
#   slurm_stop             cancels the cluster's jobs, stops slurmd, slurmctld
#                          and munged by their recorded pids (TERM, bounded
#                          wait, KILL) and checks none is left.  A no-op when
#                          nothing is running: safe twice and from EXIT traps.
#   slurm_stop_dir DIR     the same for a cluster that a killed shell started
#                          in DIR (found by the pid files under DIR).
#   slurm_wait_job ID SECS waits until the job (every array task) has left the
#                          queue; non-zero on timeout.
#
# Layout of DIR after slurm_start:
#   slurm.conf plugstack.conf         configuration (SLURM_CONF points here;
#                                     no cgroup.conf: no cgroup plugin is used)
#   munge/  munge.key munge.sock munged.pid munged.log munged.seed
#   state/  slurmctld StateSaveLocation
#   spool/  slurmd SlurmdSpoolDir (job scripts, step sockets)
#   log/    slurmctld.log slurmd.log (+ *.out: the daemons' stdout/stderr)
#   run/    slurmctld.pid slurmd.pid
# slurm_start replaces these (and only these) in DIR; the caller's own files
# (job outputs, say) may sit beside them under other names.
#
# Notes (Slurm 22.05.8, munge 0.5.15 on Debian 12):
# - munged runs with --force: it refuses a socket whose directory chain is
#   not world-searchable (mktemp -d gives 0700).  --seed-file is given too,
#   else it writes /var/lib/munge/munged.seed.
# - Slurm finds the socket through AuthInfo=socket=... (auth and cred).
# - No DNS is needed: SlurmctldHost=NAME(127.0.0.1), NodeAddr=127.0.0.1;
#   the node name must be `hostname -s` (slurmctld compares it).
# - slurmctld/slurmd bind their ports on 0.0.0.0 (22.05 cannot bind to
#   loopback only); the ports are picked free from /proc/net/tcp{,6} and a
#   start whose bind lost a race is retried on new ports.
# - "mpi/pmix ... can not load PMIx library" errors in the logs are harmless
#   (22.05 loads every MPI plugin; libpmix is not installed).
# - slurmstepd ignores SIGTERM and outlives slurmd: slurm_stop cancels the
#   jobs first and KILLs what is left.
# - Killed daemons can stay as zombies where pid 1 does not reap; they are
#   ignored (they hold no port or file).
#
# Packages (Debian 12): slurmctld slurmd slurm-client munge
# (apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge)
#
# Works with the caller under `set -e`, `set -u` and `set -o pipefail`.
# Processes it ever signals: those whose pid files are under DIR (checked to
# be the daemon that mentions DIR on its command line), their children,
# slurmstepd processes writing to DIR/log/slurmd.log, and job processes whose
# environment holds SLURM_CONF=DIR/slurm.conf.  Nothing else.

_SLURM_DIR=""            # absolute DIR of the running cluster, "" if none
_SLURM_OLD_CONF=""       # caller's SLURM_CONF before slurm_start
_SLURM_OLD_CONF_SET=0
SLURM_NODE=""            # node name (hostname -s), set by slurm_start
SLURM_CTLD_PORT=""       # ports chosen by slurm_start
SLURM_SLURMD_PORT=""

# Run FUNC with errexit off, restore the caller's errexit, return FUNC's rc.
_slurm_noerrexit() {
    local _had_e=0 _rc=0
    case $- in *e*) _had_e=1; set +e ;; esac
    "$@"
    _rc=$?
    if [ "$_had_e" = 1 ]; then set -e; fi
    return "$_rc"
}

_slurm_say() { printf 'slurm_lib: %s\n' "$*" >&2; }

# Path of a binary: PATH first, then the sbin directories (not always in a
# non-login root PATH).
_slurm_bin() {
    local p
    p=$(command -v "$1" 2>/dev/null) && [ -n "$p" ] && { printf '%s\n' "$p"; return 0; }
    for p in /usr/sbin/"$1" /sbin/"$1" /usr/bin/"$1" /usr/local/sbin/"$1" /usr/local/bin/"$1"; do
        [ -x "$p" ] && { printf '%s\n' "$p"; return 0; }
    done
    return 1
}

_slurm_available() {
    local b missing=""
    for b in munged munge unmunge slurmctld slurmd slurmstepd sbatch squeue sinfo scontrol scancel; do
        _slurm_bin "$b" >/dev/null || missing="$missing $b"
    done
    if [ -n "$missing" ]; then
        _slurm_say "missing:$missing (apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge)"
        return 1
    fi
    if [ "$(id -u)" != 0 ]; then
        _slurm_say "must run as root (slurmd runs jobs as their submitter)"
        return 1
    fi
    return 0
}
slurm_available() { _slurm_noerrexit _slurm_available "$@"; }

# --- processes -------------------------------------------------------------

# 0 when PID is alive and not a zombie (no fork: called for every process).
_slurm_alive() {
    local line st
    [ -n "${1:-}" ] || return 1
    { read -r line < "/proc/$1/stat"; } 2>/dev/null || return 1
    st=${line##*) }
    st=${st%% *}
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

_slurm_cmdline() { tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null; }

# Pid recorded in FILE, printed only when that process is alive and its
# command line mentions DIR (guards against a recycled pid).
_slurm_pidfile_pid() {
    local file=$1 dir=$2 pid
    [ -s "$file" ] || return 1
    pid=$(tr -dc '0-9' < "$file" 2>/dev/null)
    [ -n "$pid" ] && _slurm_alive "$pid" || return 1
    case "$(_slurm_cmdline "$pid")" in *"$dir/"*) printf '%s\n' "$pid"; return 0 ;; esac
    return 1
}

# Our own shell and its ancestors: never signalled.
_slurm_self_pids() {
    local p=${BASHPID:-$$}
    printf '%s\n' "$$"
    while [ -n "$p" ] && [ "$p" != 0 ]; do
        printf '%s\n' "$p"
        p=$(awk '/^PPid:/{print $2}' "/proc/$p/status" 2>/dev/null)
    done
}

# Children (by PPid) of PID.
_slurm_children() {
    awk -v pp="$1" '/^PPid:/ && $2 == pp { split(FILENAME, a, "/"); print a[3] }' \
        /proc/[0-9]*/status 2>/dev/null
}

# Stray processes belonging to the cluster in DIR that have no pid file:
# slurmstepd (its stderr goes to DIR/log/slurmd.log, its cwd is under DIR)
# and job processes (SLURM_CONF=DIR/slurm.conf and SLURM_JOB_ID in their
# environment).
_slurm_strays() {
    local dir=$1 self p pid comm fd hit
    self=" $(_slurm_self_pids | tr '\n' ' ') "
    {
        for p in /proc/[0-9]*; do
            { read -r comm < "$p/comm"; } 2>/dev/null || continue
            [ "$comm" = slurmstepd ] || continue
            case "$(readlink "$p/cwd" 2>/dev/null)" in
                "$dir"|"$dir"/*) printf '%s\n' "${p#/proc/}"; continue ;;
            esac
            hit=0
            for fd in "$p"/fd/*; do
                case "$(readlink "$fd" 2>/dev/null)" in "$dir"/*) hit=1; break ;; esac
            done
            [ "$hit" = 1 ] && printf '%s\n' "${p#/proc/}"
        done
        # one grep over every environment, then the few matches
        # shellcheck disable=SC2013  # /proc paths have no blanks
        for p in $(grep -lzxF "SLURM_CONF=$dir/slurm.conf" /proc/[0-9]*/environ 2>/dev/null); do
            p=${p%/environ}
            grep -qz '^SLURM_JOB_ID=' "$p/environ" 2>/dev/null && printf '%s\n' "${p#/proc/}"
        done
    } | sort -un | while read -r pid; do
        case "$self" in *" $pid "*) continue ;; esac
        _slurm_alive "$pid" && printf '%s\n' "$pid"
    done
}

# Send TERM to the pids, wait up to SECS for them to go, then KILL
# (SECS=0: TERM and KILL at once).
# Usage: _slurm_terminate SECS PID...
_slurm_terminate() {
    local secs=$1 pid left i
    shift
    [ $# -gt 0 ] || return 0
    for pid in "$@"; do kill -TERM "$pid" 2>/dev/null; done
    left="$*"
    for ((i = 0; i < secs * 10; i++)); do
        left=""
        for pid in "$@"; do _slurm_alive "$pid" && left="$left $pid"; done
        [ -z "$left" ] && return 0
        sleep 0.1
    done
    for pid in $left; do
        [ "$secs" -gt 0 ] &&
            _slurm_say "pid $pid ($(_slurm_cmdline "$pid")) ignored SIGTERM for $secs s; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null
    done
    for ((i = 0; i < 50; i++)); do
        left=""
        for pid in "$@"; do _slurm_alive "$pid" && left="$left $pid"; done
        [ -z "$left" ] && return 0
        sleep 0.1
    done
    return 1
}

# Stop everything recorded under DIR (absolute).  0 when nothing is left.
_slurm_stop_dir() {
    local dir=$1 ctld slurmd munged pids p left="" i q
    ctld=$(_slurm_pidfile_pid "$dir/run/slurmctld.pid" "$dir")
    slurmd=$(_slurm_pidfile_pid "$dir/run/slurmd.pid" "$dir")
    munged=$(_slurm_pidfile_pid "$dir/munge/munged.pid" "$dir")

    # Cancel the jobs while the daemons are up, so that slurmstepd and the
    # job processes go the normal way.
    if [ -n "$ctld" ] && [ -n "$slurmd" ] && [ -n "$munged" ]; then
        q=$(SLURM_CONF="$dir/slurm.conf" timeout 5 squeue -h -o %A 2>/dev/null)
        if [ -n "$q" ]; then
            # shellcheck disable=SC2086
            SLURM_CONF="$dir/slurm.conf" timeout 5 scancel $q 2>/dev/null
            for ((i = 0; i < 50; i++)); do
                q=$(SLURM_CONF="$dir/slurm.conf" timeout 5 squeue -h -o %A 2>/dev/null)
                [ -z "$q" ] && break
                sleep 0.2
            done
        fi
    fi

    # slurmd and slurmctld (plus slurmctld's child slurmscriptd) first, while
    # munged still answers them.
    pids="$slurmd $ctld"
    [ -n "$ctld" ] && pids="$pids $(_slurm_children "$ctld" | tr '\n' ' ')"
    # shellcheck disable=SC2086
    _slurm_terminate 10 $pids
    # Steps and job processes left behind (slurmstepd outlives slurmd, and
    # ignores SIGTERM): the jobs get TERM then KILL, slurmstepd KILL.
    pids=""
    for p in $(_slurm_strays "$dir"); do
        if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = slurmstepd ]; then
            kill -KILL "$p" 2>/dev/null
        else
            pids="$pids $p"
        fi
    done
    # shellcheck disable=SC2086
    _slurm_terminate 3 $pids
    # shellcheck disable=SC2046
    _slurm_terminate 0 $(_slurm_strays "$dir")
    # shellcheck disable=SC2086
    _slurm_terminate 5 $munged

    # Check: no daemon of DIR and no stray left.
    for p in "$dir/run/slurmctld.pid" "$dir/run/slurmd.pid" "$dir/munge/munged.pid"; do
        i=$(_slurm_pidfile_pid "$p" "$dir") && left="$left $i"
    done
    left="$left $(_slurm_strays "$dir" | tr '\n' ' ')"
    if [ -n "${left// /}" ]; then
        for p in $left; do _slurm_say "still running: $p $(_slurm_cmdline "$p")"; done
        return 1
    fi
    rm -f "$dir/run/slurmctld.pid" "$dir/run/slurmd.pid" "$dir/munge/munged.pid"
    return 0
}

# --- start -----------------------------------------------------------------

# TCP ports in use (any state, any address), one decimal per line.
_slurm_used_ports() {
    local f
    for f in /proc/net/tcp /proc/net/tcp6; do
        [ -r "$f" ] || continue
        awk 'NR > 1 { split($2, a, ":"); print a[2] }' "$f"
    done | while read -r hex; do printf '%d\n' "0x$hex"; done | sort -un
}

# Print two distinct free ports from 20000-59999.
_slurm_pick_ports() {
    local used p a="" n=0
    used=" $(_slurm_used_ports | tr '\n' ' ') "
    while [ "$n" -lt 2 ]; do
        p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
        case "$used" in *" $p "*) continue ;; esac
        [ "$p" = "$a" ] && continue
        if [ -z "$a" ]; then a=$p; else printf '%s %s\n' "$a" "$p"; fi
        n=$((n + 1))
    done
}

_slurm_dump_logs() {
    local dir=$1 f
    for f in "$dir/munge/munged.log" "$dir/log/slurmctld.out" "$dir/log/slurmctld.log" \
             "$dir/log/slurmd.out" "$dir/log/slurmd.log"; do
        [ -s "$f" ] || continue
        printf '%s\n' "----- $f (last 60 lines) -----" >&2
        tail -n 60 "$f" >&2
    done
    printf '%s\n' "----- end of logs -----" >&2
}

_slurm_write_conf() {
    local dir=$1 node=$2 ctld_port=$3 slurmd_port=$4 cpus=$5 topo=$6 mem=$7
    cat > "$dir/slurm.conf" <<EOF
# Written by tests/cluster/slurm_lib.sh: a throw-away single-node cluster.
ClusterName=minitest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$dir/plugstack.conf
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
# Start array tasks as soon as CPUs free up (defaults delay by seconds).
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
SlurmdTimeout=60
# The daemons' messages wait longer than the default 10 s before they count
# as lost (and are retried only a minute later): tests run beside others.
MessageTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=300
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus${topo:+ $topo} RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
    : > "$dir/plugstack.conf"
}

_slurm_start() {
    local dir=${1:-} node cpus mem topo hw ports attempt deadline now
    local sock state ok ctld slurmd b munged_bin launched dead d
    if [ -z "$dir" ] || [ ! -d "$dir" ]; then
        _slurm_say "usage: slurm_start DIR (an existing directory)"; return 2
    fi
    _slurm_available || return 1
    if [ -n "$_SLURM_DIR" ]; then
        _slurm_say "a cluster is already running in $_SLURM_DIR; slurm_stop first"; return 1
    fi
    dir=$(cd "$dir" && pwd -P) || return 1
    node=$(hostname -s 2>/dev/null)
    [ -n "$node" ] || { _slurm_say "hostname -s printed nothing"; return 1; }
    # Unix socket paths (munge.sock, slurmd's step sockets
    # spool/NODE_JOBID.STEPID) must fit in 108 bytes.
    if [ $(( ${#dir} + ${#node} + 30 )) -ge 108 ]; then
        _slurm_say "DIR too long for unix socket paths: $dir"; return 1
    fi
    deadline=$(( $(date +%s) + ${SLURM_START_TIMEOUT:-30} ))

    # Leftovers of an earlier start in this DIR (its caller killed): stop
    # them by their pid files, then start from clean state.
    _slurm_stop_dir "$dir" || { _slurm_say "cannot stop leftover daemons of $dir"; return 1; }
    rm -rf "$dir/munge" "$dir/state" "$dir/spool" "$dir/log" "$dir/run" \
           "$dir/slurm.conf" "$dir/plugstack.conf"
    mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log" "$dir/run" || return 1
    chmod 0700 "$dir/munge" "$dir/state"

    _SLURM_DIR=$dir
    if [ -n "${SLURM_CONF+set}" ]; then _SLURM_OLD_CONF_SET=1; _SLURM_OLD_CONF=$SLURM_CONF
    else _SLURM_OLD_CONF_SET=0; _SLURM_OLD_CONF=""; fi
    export SLURM_CONF="$dir/slurm.conf"

    # munged, with its own key, socket, pid, log and seed files.  --force:
    # it otherwise refuses a socket directory whose ancestors are not
    # world-searchable (mktemp -d makes 0700 directories); every client here
    # is root, so that check has nothing to protect.
    sock=$dir/munge/munge.sock
    (umask 077 && head -c 1024 /dev/urandom > "$dir/munge/munge.key") || return 1
    chmod 0600 "$dir/munge/munge.key"
    munged_bin=$(_slurm_bin munged)
    "$munged_bin" --force --socket="$sock" --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
        --seed-file="$dir/munge/munged.seed" --num-threads=2 \
        </dev/null >"$dir/log/munged.out" 2>&1
    ok=0
    while [ "$(date +%s)" -le "$deadline" ]; do
        if [ -S "$sock" ] && munge -S "$sock" -n 2>/dev/null | unmunge -S "$sock" >/dev/null 2>&1; then
            ok=1; break
        fi
        sleep 0.1
    done
    if [ "$ok" != 1 ]; then
        _slurm_say "munged did not come up on $sock"
        cat "$dir/log/munged.out" >&2
        _slurm_dump_logs "$dir"; _slurm_stop_impl; return 1
    fi

    # The node as slurmd sees it.
    cpus=$(nproc)
    hw=$(env -u SLURM_CONF "$(_slurm_bin slurmd)" -C 2>/dev/null | head -n 1)
    mem=$(printf '%s\n' "$hw" | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
    if [ -z "$mem" ]; then
        mem=$(awk '/^MemTotal:/{print int($2 / 1024)}' /proc/meminfo)
    fi
    # a bit below what slurmd measures, so that it never finds "low memory"
    mem=$(( mem - mem / 20 - 64 ))
    [ "$mem" -ge 1 ] || mem=1
    # Board/socket/core layout when it accounts for exactly $cpus CPUs.
    topo=""
    local bo so co th
    bo=$(printf '%s\n' "$hw" | sed -n 's/.* Boards=\([0-9]*\).*/\1/p')
    so=$(printf '%s\n' "$hw" | sed -n 's/.*SocketsPerBoard=\([0-9]*\).*/\1/p')
    co=$(printf '%s\n' "$hw" | sed -n 's/.*CoresPerSocket=\([0-9]*\).*/\1/p')
    th=$(printf '%s\n' "$hw" | sed -n 's/.*ThreadsPerCore=\([0-9]*\).*/\1/p')
    if [ -n "$bo" ] && [ -n "$so" ] && [ -n "$co" ] && [ -n "$th" ] &&
       [ $((bo * so * co * th)) = "$cpus" ]; then
        topo="Boards=$bo SocketsPerBoard=$so CoresPerSocket=$co ThreadsPerCore=$th"
    fi
    # shellcheck disable=SC2034  # for callers
    SLURM_NODE=$node

    # slurmctld + slurmd on free ports; again with new ports if one was
    # taken between the choice and the bind.
    for attempt in 1 2 3; do
        ports=$(_slurm_pick_ports)
        SLURM_CTLD_PORT=${ports% *}
        SLURM_SLURMD_PORT=${ports#* }
        _slurm_write_conf "$dir" "$node" "$SLURM_CTLD_PORT" "$SLURM_SLURMD_PORT" \
            "$cpus" "$topo" "$mem" || return 1
        rm -f "$dir/log/slurmctld.log" "$dir/log/slurmd.log"
        launched=$(date +%s)
        dead=""
        b=$(_slurm_bin slurmctld)
        # -i: ignore state files' errors; the state dir is new anyway.
        "$b" -f "$dir/slurm.conf" -i </dev/null >"$dir/log/slurmctld.out" 2>&1 ||
            dead="slurmctld (exit $?)"
        b=$(_slurm_bin slurmd)
        "$b" -f "$dir/slurm.conf" -N "$node" </dev/null >"$dir/log/slurmd.out" 2>&1 ||
            dead="${dead:+$dead, }slurmd (exit $?)"
        ok=0
        while [ -z "$dead" ] && now=$(date +%s) && [ "$now" -le "$deadline" ]; do
            # A daemon that wrote its pid file and died, or never wrote one.
            for d in slurmctld slurmd; do
                if [ -s "$dir/run/$d.pid" ]; then
                    _slurm_pidfile_pid "$dir/run/$d.pid" "$dir" >/dev/null ||
                        dead="${dead:+$dead, }$d (died)"
                elif [ $((now - launched)) -ge 5 ]; then
                    dead="${dead:+$dead, }$d (no pid file after 5 s)"
                fi
            done
            [ -n "$dead" ] && break
            state=$(timeout 3 sinfo -h -n "$node" -o %t 2>/dev/null | head -n 1)
            if [ "$state" = idle ]; then ok=1; break; fi
            sleep 0.2
        done
        [ "$ok" = 1 ] && break
        if [ "$attempt" -lt 3 ] && [ "$(date +%s)" -le "$deadline" ] &&
           cat "$dir"/log/slurm*.log "$dir"/log/slurm*.out 2>/dev/null |
               grep -qiE 'address already in use|unable to bind|bind\(\).*fail'; then
            _slurm_say "port taken (attempt $attempt: $SLURM_CTLD_PORT/$SLURM_SLURMD_PORT), retrying"
            ctld=$(_slurm_pidfile_pid "$dir/run/slurmctld.pid" "$dir")
            slurmd=$(_slurm_pidfile_pid "$dir/run/slurmd.pid" "$dir")
            # shellcheck disable=SC2086
            _slurm_terminate 2 $slurmd $ctld ${ctld:+$(_slurm_children "$ctld")}
            continue
        fi
        break
    done
    if [ "$ok" != 1 ]; then
        if [ -n "$dead" ]; then
            _slurm_say "daemon failed: $dead"
        else
            _slurm_say "node $node not idle within ${SLURM_START_TIMEOUT:-30} s (sinfo state: '${state:-none}')"
        fi
        if _slurm_pidfile_pid "$dir/run/slurmctld.pid" "$dir" >/dev/null; then
            timeout 3 sinfo -N -l >&2 2>&1
            timeout 3 scontrol show node "$node" >&2 2>&1
        fi
        _slurm_dump_logs "$dir"
        _slurm_stop_impl
        return 1
    fi
    return 0
}
slurm_start() { _slurm_noerrexit _slurm_start "$@"; }

_slurm_stop_impl() {
    local dir=$_SLURM_DIR rc=0
    [ -n "$dir" ] || return 0
    _slurm_stop_dir "$dir" || rc=1
    _SLURM_DIR=""
    if [ "$_SLURM_OLD_CONF_SET" = 1 ]; then export SLURM_CONF="$_SLURM_OLD_CONF"
    else unset SLURM_CONF; fi
    return "$rc"
}
slurm_stop() { _slurm_noerrexit _slurm_stop_impl "$@"; }

# Stop a cluster that another (killed) shell started in DIR, by the pid files
# under DIR, without touching this shell's own cluster or SLURM_CONF.
_slurm_stop_dir_pub() {
    local dir=${1:-}
    if [ -z "$dir" ]; then _slurm_say "usage: slurm_stop_dir DIR"; return 2; fi
    [ -d "$dir" ] || return 0
    dir=$(cd "$dir" && pwd -P) || return 1
    _slurm_stop_dir "$dir"
}
slurm_stop_dir() { _slurm_noerrexit _slurm_stop_dir_pub "$@"; }

# Terminal job states: a job (or array task) in one of them has left the
# queue even while squeue still lists it (until MinJobAge).
_slurm_wait_job() {
    local id=${1:-} secs=${2:-60} deadline out rc
    if [ -z "$id" ]; then _slurm_say "usage: slurm_wait_job JOBID TIMEOUT_S"; return 2; fi
    id=${id%%;*}    # sbatch --parsable may print "id;cluster"
    deadline=$(( $(date +%s) + secs ))
    while :; do
        out=$(timeout 10 squeue -h -t all -j "$id" -o '%i %T' 2>&1)
        rc=$?
        if [ "$rc" = 0 ]; then
            out=$(printf '%s\n' "$out" | awk 'NF >= 2 && $2 !~ /^(COMPLETED|CANCELLED|FAILED|TIMEOUT|NODE_FAIL|PREEMPTED|BOOT_FAIL|DEADLINE|OUT_OF_MEMORY|REVOKED)$/')
            [ -z "$out" ] && return 0
        elif printf '%s\n' "$out" | grep -q 'Invalid job id'; then
            return 0   # purged after MinJobAge: gone
        fi
        if [ "$(date +%s)" -ge "$deadline" ]; then
            _slurm_say "job $id still queued after $secs s:"
            printf '%s\n' "$out" >&2
            return 1
        fi
        sleep 0.2
    done
}
slurm_wait_job() { _slurm_noerrexit _slurm_wait_job "$@"; }

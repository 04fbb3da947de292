#!/bin/bash
# Security tests of the workspace: who owns what the
# sandbox writes, setuid files, symlinked and planted workspace paths,
# system directories, the daemon's socket and the user's secrets as
# workspaces.  Each check attacks from where a user (or a model's command)
# stands and looks at the result on the host: owners, groups and mode bits
# of files, what exists, whether the daemon still answers.
#
#  1. root daemon, root-owned workspace: taken, what it makes is root's
#     (attacked in full by root_checkout.sh)
#  2. root daemon, workspace owned by W: commands run as a uid S of their
#     own (not 0, not W, >= 2146435072, one per session); inside they are
#     0 and see W's files as 0's; what they create is W's on the host, in
#     group GW (W's primary group when 100 or >= 1000, else 65534), never
#     the workspace directory's group (0, 42); root's 0600 files, 0700
#     directories and 0600 sockets in W's workspace stay out of reach
#  3. no setuid/setgid file can be made (EPERM), root and rootless
#  4. a workspace path with a symlink in it is refused, also one the
#     sandbox planted itself
#  5. system directories and directories holding the daemon's socket
#     (named through a symlink, or relative) are refused
#  6. the daemon's and the owner's home directories are refused; mini's
#     config directory (.env with API keys) is hidden in every profile
#
# Root-only checks skip when rootless, rootless-only ones as root.  Prints "N passed, N failed".
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"

TAG=$RUN_TAG
NOBODY=65534
# The uids a root daemon gives sandboxes start here (the top 1 Mi of the
# 31-bit range).
S_MIN=2146435072
HAVE_PY=0
if have python3; then HAVE_PY=1; fi

mapfile -t PROF_ARGS < <(mini_profiles_args)

# msr SOCK WS [RUN OPTIONS] -- COMMAND: one command through the daemon on
# SOCK with workspace WS (strict unless the options start with --profile).
msr() {
    local sock=$1 ws=$2
    shift 2
    local prof=(--profile strict)
    [[ ${1:-} == --profile ]] && prof=()
    bounded "$MINI_BIN/mini-sandbox" run --socket "$sock" --workspace "$ws" "${prof[@]}" "$@" </dev/null
}
# wsr WS [RUN OPTIONS] -- COMMAND: the same through our main daemon.
wsr() { msr "$SOCK" "$@"; }

lc() { printf '%s' "$1" | tr '[:upper:]' '[:lower:]'; }

# expect_refused_msg NAME MESSAGE CMD...: status 125, MESSAGE on stderr
# (any case), and the command did not run (it would print SHOULD-NOT-RUN).
expect_refused_msg() {
    local name=$1 msg=$2
    shift 2
    run "$@"
    if [[ $RC == 125 ]] && contains "$(lc "$ERR")" "$(lc "$msg")" && ! contains "$OUT" SHOULD-NOT-RUN; then
        pass "$name"
    else
        fail "$name" "expected status 125, \"$msg\" on stderr, and no output from the command"
    fi
}

# expect_eperm NAME SNIPPET: SNIPPET, run inside (strict, in $WS), must
# fail with EPERM ("Operation not permitted").
expect_eperm() {
    local name=$1 snippet=$2
    run sbx -- "cd '$WS' && $(attack_cmd "$snippet")"
    if [[ $RC == 0 ]] && contains "$OUT" ATTACK-FAILED && contains "$OUT" "Operation not permitted"; then
        pass "$name"
    elif contains "$OUT" ATTACK-SUCCEEDED; then
        fail "$name" "the attack succeeded: $snippet"
    elif contains "$OUT" ATTACK-FAILED; then
        fail "$name" "it failed, but not with EPERM: $snippet"
    else
        fail "$name" "the sandboxed command did not run to the end: $snippet"
    fi
}

# proto_open SOCK WS: open a session on WS over the socket itself (no
# client CLI in between; tests/integration/pool_client.py), and run a
# command in it.  Prints "REFUSED <code> <message>" or "OPENED <output>".
proto_open() {
    bounded env PYTHONPATH="$MINI_SOURCE_DIR/tests/integration" python3 -B -c '
import sys
from pool_client import connect, DaemonError
c = connect(sys.argv[1])
try:
    s = c.open(sys.argv[2], profile="strict")
    print("OPENED", c.run(s, "echo SHOULD-NOT-RUN")["output"])
except DaemonError as e:
    print("REFUSED", e.code, e.reply.get("message"))
' "$@"
}

# setid_files DIR: files and directories under DIR (DIR included) with a
# setuid or setgid bit.
setid_files() { find "$1" -perm /6000 2>/dev/null | head -n 20; }
no_setid_files() { [[ -z $(setid_files "$1") ]]; }

# An extra daemon (its own socket and state): start_xdaemon NAME CWD
# PING_SOCK [ENV=VAL...] -- [DAEMON ARGS...].  Sets XPID (empty when it
# did not come up; XWHY says why).  stop_xdaemon ends it.
XPID=
XWHY=
start_xdaemon() {
    local name=${1//[^a-zA-Z0-9]/_} cwd=$2 ping_sock=$3
    shift 3
    local envs=()
    while [[ $# -gt 0 && $1 != -- ]]; do envs+=("$1"); shift; done
    [[ ${1:-} == -- ]] && shift
    local log=$T/xdaemon-$name.log
    mkdir -m 0700 "$T/xstate-$name"
    (cd "$cwd" && exec env "${envs[@]}" "$MINI_BIN/mini-sandboxd" --state-dir "$T/xstate-$name" --foreground \
        "${PROF_ARGS[@]}" "$@") >>"$log" 2>&1 </dev/null &
    XPID=$!
    BG_PIDS+=("$XPID")
    XWHY=
    local i
    for i in $(seq 1 100); do
        if timeout 5 "$MINI_BIN/mini-sandbox" ping --socket "$ping_sock" >/dev/null 2>&1 </dev/null; then
            log "# extra mini-sandboxd ($name) running, pid $XPID, socket $ping_sock"
            return 0
        fi
        pid_exited "$XPID" && break
        sleep 0.1
    done
    XWHY="mini-sandboxd did not answer ping on $ping_sock; its log: $(tail -n 5 "$log" | tr '\n' ' ')"
    stop_xdaemon
    return 0
}
stop_xdaemon() {
    [[ -n $XPID ]] || return 0
    local pid=$XPID
    XPID=
    kill -TERM "$pid" 2>/dev/null || true
    wait_pid "$pid" 10 || true
}

# ---- a throwaway user (root): ids and clean-up --------------------------
# mkuser NAME HOME USERADD-ARGS...: create a user (no home made), deleted
# at exit; MKUSER_UID is its uid, or empty when useradd is missing or fails.
MKUSER_UID=
mkuser() {
    local name=$1 home=$2
    shift 2
    MKUSER_UID=
    have useradd || return 0
    local i
    for i in 1 2 3; do
        if useradd -M -d "$home" -s /usr/sbin/nologin "$@" "$name" >/dev/null 2>&1; then
            cleanup_cmd "userdel $name; groupdel $name"
            MKUSER_UID=$(id -u "$name")
            return 0
        fi
        sleep 0.5   # /etc/passwd locked by someone else's useradd
    done
    return 0
}
# A uid with no passwd entry.
bare_uid() {
    local u
    for u in $(seq 4242 4342); do
        getent passwd "$u" >/dev/null 2>&1 || { printf '%s' "$u"; return 0; }
    done
}

start_daemon
SBX_PROFILE=strict

run sbx -- 'echo "sane:$(id -u)"'
if [[ $RC == 0 && $OUT == *sane:* ]]; then
    pass "sanity: a command runs in the test's workspace"
else
    fail "sanity: a command runs in the test's workspace"
    log "# the sandbox does not run: the checks below would mean nothing; stopping"
    finish
fi

# ==== 1. a root daemon takes a root-owned workspace (the CI case) =========
# What the sandbox makes there is root's; root_checkout.sh attacks that in
# every profile.  Here: it runs, and over the socket too.
if is_root; then
    RWS=$T/root-ws
    mkdir -m 0755 "$RWS"
    run wsr "$RWS" -- "touch '$RWS/ran-$TAG'; echo RAN"
    if [[ $RC == 0 && $OUT == RAN ]] && [[ $(stat -c %u:%g "$RWS/ran-$TAG" 2>/dev/null) == 0:0 ]]; then
        pass "[1] root daemon: a root-owned workspace is taken; what the command made is root:root"
    else
        fail "[1] root daemon: a root-owned workspace is taken; what the command made is root:root" "status $RC"
    fi
    if (( HAVE_PY )); then
        run proto_open "$SOCK" "$RWS"
        if [[ $RC == 0 ]] && contains "$OUT" "OPENED"; then
            pass "[1] root-owned workspace: open over the socket succeeds"
        else
            fail "[1] root-owned workspace: open over the socket succeeds" "$OUT"
        fi
    fi
else
    skip "[1] root daemon: a root-owned workspace is taken" "rootless (root-only)"
fi

# ==== 2. a root daemon: the sandbox's uid, and what its files belong to ====
# host_ids PID: "U U U U|G G G G" from /proc/PID/status.
host_ids() {
    awk '/^Uid:/{u=$2" "$3" "$4" "$5} /^Gid:/{g=$2" "$3" "$4" "$5} END{print u"|"g}' "/proc/$1/status" 2>/dev/null
}
# sandbox_uid_of SLEEP-ARG: the single host uid S of the sandboxed
# `sleep SLEEP-ARG` when all four uids and all four gids equal S; else
# prints what it found, prefixed with "bad:".
sandbox_uid_of() {
    local pids p ids u g ua ga
    pids=$(pids_by_cmdline "sleep $1")
    [[ -n $pids ]] || { printf 'bad:no process'; return 0; }
    for p in $pids; do
        ids=$(host_ids "$p")
        u=${ids%|*} g=${ids#*|}
        read -r -a ua <<<"$u"
        read -r -a ga <<<"$g"
        if [[ ${#ua[@]} == 4 && ${#ga[@]} == 4 && ${ua[0]} == "${ua[1]}" && ${ua[0]} == "${ua[2]}" &&
              ${ua[0]} == "${ua[3]}" && "${ga[*]}" == "${ua[0]} ${ua[0]} ${ua[0]} ${ua[0]}" ]]; then
            printf '%s' "${ua[0]}"
        else
            printf 'bad:Uid %s Gid %s' "$u" "$g"
        fi
        return 0
    done
}

# ownership_case LABEL DIR W GW: DIR (owned by W, group not GW, mode
# 0775 without setgid) is the workspace.  The command creates files, a
# directory tree and a symlink, and tries to hand them the directory's
# group or a setid bit; on the host all of it must be W:GW, nothing below
# DIR in group 0 or 42, and no setuid/setgid bit anywhere (DIR included).
ownership_case() {
    local label=$1 dir=$2 w=$3 gw=$4
    local dgrp
    dgrp=$(stat -c %g "$dir")
    run wsr "$dir" -- "cd '$dir' || exit 9
        echo f >f-$TAG; mkdir d-$TAG; mkdir -p d-$TAG/sub; echo g >d-$TAG/sub/g; ln -s f-$TAG l-$TAG
        cp /bin/true x-$TAG
        # the attacks: the directory's group, root's group, shadow, setid bits
        for g in \$(stat -c %g .) 0 42; do chgrp \$g f-$TAG x-$TAG d-$TAG; done
        chown 0:0 f-$TAG; chmod g+s d-$TAG . ; chmod 2755 x-$TAG; chmod 4755 x-$TAG
        echo made-$TAG"
    if [[ $RC != 0 ]] || ! contains "$OUT" "made-$TAG"; then
        fail "[2] $label: the sandbox ran and made its files" "expected status 0 and made-$TAG"
        return 0
    fi
    local p got bad=
    for p in "f-$TAG" "d-$TAG" "d-$TAG/sub" "d-$TAG/sub/g" "l-$TAG" "x-$TAG"; do
        got=$(stat -c '%u %g' "$dir/$p" 2>/dev/null || echo missing)
        [[ $got == "$w $gw" ]] || bad+="$p=$got($(stat -c %a "$dir/$p" 2>/dev/null)) "
    done
    RC=0 OUT= ERR=
    local what="[2] $label: what the sandbox created is $w:$gw on the host"
    [[ $dgrp != "$gw" ]] && what+=" (never the directory's group $dgrp)"
    if [[ -z $bad ]]; then pass "$what"
    else fail "$what" "host owner:group(mode): $bad"; fi
    local leaks
    leaks=$( { find "$dir" -mindepth 1 \( -group 0 -o -group 42 \) 2>/dev/null; setid_files "$dir"; } |
        while read -r p; do printf '%s ' "${p#"$dir"/}:$(stat -c '%u:%g:%a' "$p")"; done)
    if [[ -z $leaks ]]; then
        pass "[2] $label: after chgrp/chmod attacks, nothing is in group 0 or 42 and nothing is setuid/setgid"
    else
        fail "[2] $label: after chgrp/chmod attacks, nothing is in group 0 or 42 and nothing is setuid/setgid" \
            "on the host: $leaks"
    fi
}

# mkws_as DIR UID GID MODE: a workspace owned by UID:GID with MODE.
mkws_as() {
    mkdir -p "$1"
    chown "$2:$3" "$1"
    chmod "$4" "$1"
}

if is_root; then
    A=$T/ws-g0
    mkws_as "$A" "$NOBODY" 0 0775
    echo host-file >"$A/hostfile"
    chown "$NOBODY:$NOBODY" "$A/hostfile"

    # Two sessions at once on the same workspace.
    S1=$(uniq_sleep 41) S2=$(uniq_sleep 42)
    wsr "$A" -- "sleep $S1" >/dev/null 2>&1 &
    p1=$!
    wsr "$A" -- "sleep $S2" >/dev/null 2>&1 &
    p2=$!
    BG_PIDS+=("$p1" "$p2")
    u1=bad:not-started u2=bad:not-started
    if wait_until 15 has_process "sleep $S1" && wait_until 15 has_process "sleep $S2"; then
        u1=$(sandbox_uid_of "$S1")
        u2=$(sandbox_uid_of "$S2")
    fi
    RC=0 OUT= ERR=
    if [[ $u1 =~ ^[0-9]+$ ]] && (( u1 != 0 && u1 != NOBODY && u1 >= S_MIN )); then
        pass "[2] root daemon: the command runs on the host as a uid of its own (Uid/Gid all $u1: not 0, not the owner $NOBODY, >= $S_MIN)"
    else
        fail "[2] root daemon: the command runs on the host as a uid of its own (not 0, not the owner $NOBODY, >= $S_MIN)" \
            "host ids of the sandboxed sleep: $u1"
    fi
    if [[ $u1 =~ ^[0-9]+$ && $u2 =~ ^[0-9]+$ && $u1 != "$u2" ]] && (( u2 != 0 && u2 != NOBODY && u2 >= S_MIN )); then
        pass "[2] root daemon: two sessions at once run as different uids ($u1, $u2)"
    else
        fail "[2] root daemon: two sessions at once run as different uids" "first: $u1, second: $u2"
    fi
    for p in $(client_pids "sleep $S1") $(client_pids "sleep $S2"); do kill -KILL "$p" 2>/dev/null || true; done
    wait_pid "$p1" 10 || true
    wait_pid "$p2" 10 || true

    expect_eq "[2] inside, the command is uid 0" "0" wsr "$A" -- 'id -u'
    expect_eq "[2] inside, the workspace and the owner's files appear owned by 0" "0 0" \
        wsr "$A" -- "echo \$(stat -c %u '$A' '$A/hostfile')"

    ownership_case "workspace $NOBODY:0 mode 0775" "$A" "$NOBODY" "$NOBODY"

    # Root's own files and sockets in the owner's workspace (the red team
    # reached a 0600 root socket through the old mapping): out of reach,
    # and untouched on the host.
    R=$A/rootstuff
    mkdir -m 0755 "$R"
    printf 'root-secret-%s\n' "$TAG" >"$R/secret"
    chmod 0600 "$R/secret"
    mkdir -m 0700 "$R/private"
    echo inner >"$R/private/inner"
    if (( HAVE_PY )); then
        python3 - "$R/sock" "$T/rootsock.log" <<'PY' >"$T/rootsock.ready" 2>&1 &
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o600); s.listen(4)
print("ready", flush=True)
s.settimeout(60)
try:
    c, _ = s.accept()
    open(sys.argv[2], "a").write("CONNECTED\n")
except OSError:
    pass
PY
        BG_PIDS+=("$!")
        wait_until 10 grep -q ready "$T/rootsock.ready" || true
    fi
    root_attacks=(
        "cat '$R/secret'"
        "echo x >>'$R/secret'"
        "chmod 0644 '$R/secret'"
        "ls '$R/private'"
        "cat '$R/private/inner'"
        "touch '$R/planted'"
    )
    (( HAVE_PY )) && root_attacks+=("python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])' '$R/sock'")
    for snippet in "${root_attacks[@]}"; do
        run wsr "$A" -- "$(attack_cmd "$snippet")"
        if [[ $RC == 0 ]] && contains "$OUT" ATTACK-FAILED && ! contains "$OUT" "root-secret-"; then
            pass "[2] root's 0600/0700 files and socket in the workspace are out of reach: $snippet"
        else
            fail "[2] root's 0600/0700 files and socket in the workspace are out of reach: $snippet" \
                "status $RC, output: ${OUT:0:200}"
        fi
    done
    check "[2] host: root's file is unchanged (content, root:root 0600), nothing planted beside it" \
        bash -c "[[ \$(cat '$R/secret') == root-secret-$TAG && \$(stat -c '%u:%g:%a' '$R/secret') == 0:0:600 && ! -e '$R/planted' ]]"
    if (( HAVE_PY )); then
        check "[2] host: root's 0600 socket never accepted a connection from the sandbox" test ! -e "$T/rootsock.log"
    fi
    rm -rf "$R"

    B=$T/ws-g42
    mkws_as "$B" "$NOBODY" 42 0775
    ownership_case "workspace $NOBODY:42 (shadow) mode 0775" "$B" "$NOBODY" "$NOBODY"

    U0=$(bare_uid)
    if [[ -n $U0 ]]; then
        C=$T/ws-bare
        mkws_as "$C" "$U0" 0 0775
        ownership_case "workspace of uid $U0 (no passwd entry), group 0" "$C" "$U0" "$NOBODY"
    else
        skip "[2] workspace of a uid with no passwd entry" "no free uid in 4242..4342"
    fi

    # Users with a primary group of 42 (not 100, below 1000: 65534 instead),
    # 100 (kept) and one of their own (>= 1000, kept).
    mkuser "mp7a$TAG" /nonexistent -g 42
    ua=$MKUSER_UID
    mkuser "mp7b$TAG" /nonexistent -g 100
    ub=$MKUSER_UID
    UE_HOME=$T/home-e
    mkuser "mp7e$TAG" "$UE_HOME" -U
    ue=$MKUSER_UID
    if [[ -n $ua && -n $ub && -n $ue ]]; then
        D=$T/ws-ua
        mkws_as "$D" "$ua" 42 0775
        ownership_case "workspace of a user whose primary group is 42, group 42" "$D" "$ua" "$NOBODY"
        E=$T/ws-ub
        mkws_as "$E" "$ub" 0 0775
        ownership_case "workspace of a user whose primary group is 100, group 0" "$E" "$ub" 100
        ge=$(id -g "mp7e$TAG")
        F=$T/ws-ue
        mkws_as "$F" "$ue" 0 0775
        if (( ge >= 1000 )); then
            ownership_case "workspace of a user with a group of their own ($ge), group 0" "$F" "$ue" "$ge"
        else
            ownership_case "workspace of a user with a group of their own ($ge < 1000), group 0" "$F" "$ue" "$NOBODY"
        fi
    else
        skip "[2] workspaces of users with primary groups 42, 100, own" "useradd is missing or failed"
    fi
    skip "[2] rootless: what the sandbox creates is the daemon's user's" "root (rootless-only)"
else
    skip "[2] root daemon: sandbox uid, file owners and groups" "rootless (root-only)"
    RLWS=$T/ws-rootless
    mkdir -m 0775 "$RLWS"
    ownership_case "rootless: workspace of the daemon's user, mode 0775" "$RLWS" "$(id -u)" "$(id -g)"
fi

# ==== 3. no setuid or setgid file on the host ===========================
expect_allowed "[3] control: an ordinary chmod works inside" \
    "cd '$WS' && cp /bin/true plain-$TAG && chmod 0755 plain-$TAG && chmod 0644 plain-$TAG"
expect_eperm "[3] cp /bin/sh x; chmod 4755 x fails (EPERM)" "cp /bin/sh suid-a-$TAG && chmod 4755 suid-a-$TAG"
expect_eperm "[3] chmod u+s fails (EPERM)" "cp /bin/sh suid-b-$TAG && chmod u+s suid-b-$TAG"
expect_eperm "[3] chmod g+s on a file fails (EPERM)" "cp /bin/sh sgid-c-$TAG && chmod g+s sgid-c-$TAG"
expect_eperm "[3] chmod g+s on a directory fails (EPERM)" "mkdir sgid-d-$TAG && chmod g+s sgid-d-$TAG"
expect_eperm "[3] chmod g+s on the workspace itself fails (EPERM)" "chmod g+s ."
expect_eperm "[3] install -m 4755 fails (EPERM)" "install -m 4755 /bin/sh suid-e-$TAG"
if have python3; then
    expect_eperm "[3] python os.open(O_CREAT, 0o4755) fails (EPERM)" \
        "python3 -c 'import os; os.open(\"suid-f-$TAG\", os.O_CREAT | os.O_WRONLY, 0o4755)'"
    expect_eperm "[3] python os.mknod(0o4755) fails (EPERM)" \
        "python3 -c 'import os; os.mknod(\"suid-g-$TAG\", 0o4755)'"
    expect_eperm "[3] python os.chmod(0o6755) fails (EPERM)" \
        "python3 -c 'import os; open(\"suid-h-$TAG\", \"w\").close(); os.chmod(\"suid-h-$TAG\", 0o6755)'"
    expect_eperm "[3] python os.fchmod(fd, 0o4755) fails (EPERM)" \
        "python3 -c 'import os; fd = os.open(\"suid-i-$TAG\", os.O_CREAT | os.O_WRONLY, 0o755); os.fchmod(fd, 0o4755)'"
    # A tarball with a setuid member, unpacked as (namespace) root.
    expect_eperm "[3] tar xpf of an archive with a 4755 member fails (EPERM)" \
        "python3 -c 'import io, tarfile; t = tarfile.open(\"st-$TAG.tar\", \"w\"); i = tarfile.TarInfo(\"suid-j-$TAG\"); i.mode = 0o4755; i.size = 2; t.addfile(i, io.BytesIO(b\"#!\")); t.close()' && tar xpf st-$TAG.tar"
else
    skip "[3] python3 setuid attacks" "python3 not installed"
fi
run true
if no_setid_files "$WS"; then pass "[3] host: find WS -perm /6000 is empty after the attacks"
else fail "[3] host: find WS -perm /6000 is empty after the attacks" "$(setid_files "$WS" | while read -r p; do stat -c '%n %u:%g %a' "$p"; done)"; fi

# ==== 4. symlinks in the workspace path ===================================
mkws "$WS/sub"
ln -sfn "$WS" "$T/wslink"
ln -sfn "$T" "$T/tlink"
ln -sfn "$WS/sub" "$WS/sublink"
expect_refused_msg "[4] --workspace a symlink to the workspace is refused" "symbolic link" \
    wsr "$T/wslink" -- 'echo SHOULD-NOT-RUN'
expect_refused_msg "[4] --workspace with a symlinked ancestor (T-link/ws) is refused" "symbolic link" \
    wsr "$T/tlink/ws" -- 'echo SHOULD-NOT-RUN'
expect_refused_msg "[4] --workspace a symlink inside the workspace to a subdirectory is refused" "symbolic link" \
    wsr "$WS/sublink" -- 'echo SHOULD-NOT-RUN'
run bash -c 'cd "$1" && exec "$2/mini-sandbox" run --socket "$3" --workspace ws --profile strict -- pwd </dev/null' \
    _ "$T" "$MINI_BIN" "$SOCK"
if [[ $RC == 0 && $OUT == "$WS" ]]; then pass "[4] control: a relative --workspace without symlinks works"
else fail "[4] control: a relative --workspace without symlinks works" "expected status 0 and $WS"; fi
if (( HAVE_PY )); then
    run proto_open "$SOCK" "$T/wslink"
    if [[ $RC == 0 ]] && contains "$OUT" "REFUSED workspace_invalid" && contains "$OUT" "symbolic link"; then
        pass "[4] the daemon itself refuses a symlinked workspace (open over the socket: workspace_invalid)"
    else
        fail "[4] the daemon itself refuses a symlinked workspace (open over the socket: workspace_invalid)"
    fi
fi

# Planted links: a command plants WS/build -> /etc (and, as root, WS/priv
# -> a root-only directory); a later run names WS/build as its workspace.
cleanup_path "/etc/mini-p7-$TAG"
expect_eq "[4] a command plants WS/build -> /etc" "planted" \
    sbx -- "cd '$WS' && ln -sfn /etc build && echo planted"
etc_before=$(stat -c '%i %u %g %a' /etc)
expect_refused "[4] --workspace WS/build (planted link to /etc) is refused" \
    wsr "$WS/build" -- "touch mini-p7-$TAG; touch /etc/mini-p7-$TAG; echo SHOULD-NOT-RUN; cat /etc/hostname"
check "[4] host: nothing was created in /etc and /etc is unchanged" \
    test ! -e "/etc/mini-p7-$TAG" -a "$(stat -c '%i %u %g %a' /etc)" = "$etc_before"
if is_root; then
    RO=$T/rootonly
    mkdir -m 0700 "$RO"
    echo "rootonly-secret-$TAG" >"$RO/marker"
    chmod 0600 "$RO/marker"
    ro_before=$(stat -c '%u %g %a' "$RO")
    expect_eq "[4] a command plants WS/priv -> a root-only (0700) directory" "planted" \
        sbx -- "cd '$WS' && ln -sfn '$RO' priv && echo planted"
    run wsr "$WS/priv" -- "cat marker; cat '$RO/marker'; touch planted-$TAG; chmod 0777 .; echo SHOULD-NOT-RUN"
    if [[ $RC == 125 ]] && ! contains "$OUT$ERR" "rootonly-secret-$TAG" && ! contains "$OUT" SHOULD-NOT-RUN; then
        pass "[4] --workspace WS/priv (planted link to a root-only directory) is refused, the marker not read"
    else
        fail "[4] --workspace WS/priv (planted link to a root-only directory) is refused, the marker not read"
    fi
    check "[4] host: the root-only directory is unchanged (no new file, still root 0700)" \
        test ! -e "$RO/planted-$TAG" -a "$(stat -c '%u %g %a' "$RO")" = "$ro_before"
else
    skip "[4] planted link to a root-only directory" "rootless (root-only)"
fi

# ==== 5. system directories, and the daemon's socket =======================
for d in / /etc /run /usr /var/lib /home /tmp /proc/self /sys /dev; do
    if [[ ! -e $d ]]; then
        skip "[5] --workspace $d is refused" "$d does not exist here"
        continue
    fi
    expect_refused_msg "[5] --workspace $d is refused (\"not allowed\")" "not allowed" \
        wsr "$d" -- 'echo SHOULD-NOT-RUN'
done

# The attack a workspace holding the socket allows: replace the socket
# with a listener of one's own (renaming the directory when the socket
# itself cannot be removed).
sock_attack() {
    printf '%s' "d='$1'
fake_listen() { python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); print(\"FAKE-LISTENING\")' \"\$d/sock\"; }
rm -f \"\$d/sock\" 2>/dev/null
fake_listen 2>/dev/null || { mv \"\$d\" \"\$d.old\" && mkdir \"\$d\" && fake_listen; }
echo SHOULD-NOT-RUN"
}

# socket_case LABEL ANCESTOR SOCKDIR PING_SOCK CWD SOCKET-ARG: a daemon
# whose socket is SOCKDIR/sock, named as SOCKET-ARG from CWD; ANCESTOR
# (an ordinary workspace, owned like $WS) holds SOCKDIR.
socket_case() {
    local label=$1 anc=$2 sockdir=$3 ping_sock=$4 cwd=$5 sockarg=$6
    start_xdaemon "$label" "$cwd" "$ping_sock" -- --socket "$sockarg"
    if [[ -z $XPID ]]; then
        RC=0 OUT= ERR=
        fail "[5] $label: the daemon starts and answers ping" "$XWHY"
        fail "[5] $label: --workspace an ancestor of the socket's directory is refused" "no daemon"
        fail "[5] $label: --workspace the socket's directory is refused" "no daemon"
        fail "[5] $label: the socket is still the daemon's after the attack" "no daemon"
        return 0
    fi
    pass "[5] $label: the daemon starts and answers ping"
    local ino_before
    ino_before=$(stat -c %i "$sockdir/sock" 2>/dev/null || echo none)
    local sib=$anc-sibling
    mkws "$sib"
    expect_eq "[5] $label: control: a workspace beside the socket's directory works" "beside" \
        msr "$ping_sock" "$sib" -- 'echo beside'
    local w what
    for w in "$anc" "$sockdir"; do
        what="the socket's directory"
        [[ $w == "$anc" ]] && what="an ancestor of the socket's directory"
        # A refusal only counts while the daemon is still there to refuse.
        if [[ $(stat -c %i "$sockdir/sock" 2>/dev/null) != "$ino_before" ]] ||
           ! timeout 5 "$MINI_BIN/mini-sandbox" ping --socket "$ping_sock" >/dev/null 2>&1 </dev/null; then
            RC=0 OUT= ERR=
            fail "[5] $label: --workspace $what is refused" "the socket was already replaced by an earlier attack"
            continue
        fi
        run msr "$ping_sock" "$w" -- "$(sock_attack "$sockdir")"
        if [[ $RC == 125 ]] && ! contains "$OUT" SHOULD-NOT-RUN && ! contains "$OUT" FAKE-LISTENING; then
            pass "[5] $label: --workspace $what is refused"
        else
            fail "[5] $label: --workspace $what is refused" "the attack ran: expected status 125"
        fi
    done
    local ino_after
    ino_after=$(stat -c %i "$sockdir/sock" 2>/dev/null || echo none)
    if [[ -S $sockdir/sock && $ino_after == "$ino_before" ]] &&
       timeout 5 "$MINI_BIN/mini-sandbox" ping --socket "$ping_sock" >/dev/null 2>&1 </dev/null; then
        pass "[5] $label: the socket is still the daemon's after the attack (same inode, ping answers)"
    else
        fail "[5] $label: the socket is still the daemon's after the attack (same inode, ping answers)" \
            "inode before $ino_before, after $ino_after; $(ls -la "$anc" 2>&1 | tr '\n' ' ')"
    fi
    stop_xdaemon
}

if (( HAVE_PY )); then
    # Through a symlink: --socket LINK/sock, LINK -> ANC/d (the daemon's
    # own 0700 directory).
    SKA=$T/sk-link
    mkws "$SKA"
    mkdir -m 0700 "$SKA/d"
    ln -sfn "$SKA/d" "$T/sock-link"
    socket_case "--socket through a symlink" "$SKA" "$SKA/d" "$SKA/d/sock" "$T" "$T/sock-link/sock"
    # Relative: cd ANC; --socket d/sock.
    SKR=$T/sk-rel
    mkws "$SKR"
    socket_case "relative --socket" "$SKR" "$SKR/d" "$SKR/d/sock" "$SKR" "d/sock"
else
    skip "[5] the daemon's socket as part of a workspace" "python3 not installed"
fi

# ==== 6. home directories and mini's secrets ================================
# A place for a home directory that permissive shows (it binds the whole
# host read-only but puts a tmpfs on /tmp and /var/tmp): the first
# candidate where a control file is visible from inside.
SB=
for base in /run/lock "$MINI_BUILD_DIR" /var/lib; do
    [[ -n $base && -d $base && -w $base ]] || continue
    cand=$(mktemp -d "$base/mini-p7-secrets.XXXXXX" 2>/dev/null) || continue
    cleanup_path "$cand"
    chmod 0755 "$cand"
    echo "control-visible-$TAG" >"$cand/control"
    chmod 0644 "$cand/control"
    run sbx --profile permissive -- "cat '$cand/control'"
    if [[ $RC == 0 && $OUT == *control-visible-$TAG* ]]; then SB=$cand; break; fi
done
if [[ -z $SB ]]; then
    RC=0 OUT= ERR=
    fail "[6] setup: a directory outside /tmp that permissive shows (for the test's HOME)" \
        "tried /run/lock, $MINI_BUILD_DIR, /var/lib"
else
    SH=$SB/home
    mkdir -p "$SH/.config/mini-swe-agent" "$SB/xdg/mini-swe-agent" "$SB/gcfg" "$SB/other"
    echo "OPENAI_API_KEY=sk-canary-$TAG-home" >"$SH/.config/mini-swe-agent/.env"
    echo "OPENAI_API_KEY=sk-canary-$TAG-xdg" >"$SB/xdg/mini-swe-agent/.env"
    echo "OPENAI_API_KEY=sk-canary-$TAG-mswea" >"$SB/gcfg/.env"
    chmod -R a+rX "$SB"
    if is_root; then chown -R "$NOBODY:$NOBODY" "$SB"; fi

    # canary_case LABEL CFGDIR CANARY PROFILES...: through the extra
    # daemon, CFGDIR/.env must not be readable under PROFILES.
    canary_case() {
        local label=$1 cfg=$2 canary=$3
        shift 3
        local prof
        for prof in "$@"; do
            run msr "$XSOCK" "$WS" --profile "$prof" -- \
                "cat '$cfg/.env' 2>&1; ls -la '$cfg' 2>&1; grep -rh OPENAI '$cfg' 2>&1; echo looked-$TAG"
            if [[ $RC == 0 ]] && contains "$OUT" "looked-$TAG" && ! contains "$OUT" "$canary"; then
                pass "[6] $label: $prof: the config directory's .env is not readable"
            else
                fail "[6] $label: $prof: the config directory's .env is not readable" \
                    "expected status 0, looked-$TAG and no $canary"
            fi
        done
    }

    # (a) HOME only: ~/.config/mini-swe-agent.
    XSOCK=$T/xs-home/sock
    mkdir -m 0700 "$T/xs-home"
    start_xdaemon home "$T" "$XSOCK" -u XDG_CONFIG_HOME -u MSWEA_GLOBAL_CONFIG_DIR HOME="$SH" -- --socket "$XSOCK"
    if [[ -n $XPID ]]; then
        canary_case "HOME/.config/mini-swe-agent" "$SH/.config/mini-swe-agent" "sk-canary-$TAG-home" \
            permissive standard strict
        # (The test's home sits under /run/lock, a system directory, so
        # the control workspace is one of the test's own.)
        mkdir -p "$T/beside-home"
        is_root && chown "$(stat -c %u:%g "$WS")" "$T/beside-home"
        expect_eq "[6] control: a workspace that is not a home directory works" "beside" \
            msr "$XSOCK" "$T/beside-home" -- 'echo beside'
        expect_refused_msg "[6] --workspace the daemon's home directory is refused" "home directory" \
            msr "$XSOCK" "$SH" -- 'echo SHOULD-NOT-RUN'
        expect_refused "[6] --workspace HOME/.config (holds mini's config directory) is refused" \
            msr "$XSOCK" "$SH/.config" -- 'echo SHOULD-NOT-RUN'
        expect_refused "[6] --workspace mini's config directory itself is refused" \
            msr "$XSOCK" "$SH/.config/mini-swe-agent" -- 'echo SHOULD-NOT-RUN'
        if is_root && [[ -n ${ue:-} ]]; then
            mkdir -p "$UE_HOME"
            chown "$ue:$(id -g "mp7e$TAG")" "$UE_HOME"
            expect_refused_msg "[6] --workspace the owner's home directory (from passwd) is refused" "home directory" \
                msr "$XSOCK" "$UE_HOME" -- 'echo SHOULD-NOT-RUN'
        elif is_root; then
            skip "[6] --workspace the owner's home directory is refused" "useradd is missing or failed"
        else
            skip "[6] --workspace the owner's home directory is refused" "rootless (root-only)"
        fi
        stop_xdaemon
    else
        RC=0 OUT= ERR=
        fail "[6] a daemon with HOME=$SH starts" "$XWHY"
    fi

    # (b) XDG_CONFIG_HOME/mini-swe-agent.
    XSOCK=$T/xs-xdg/sock
    mkdir -m 0700 "$T/xs-xdg"
    start_xdaemon xdg "$T" "$XSOCK" -u MSWEA_GLOBAL_CONFIG_DIR HOME="$SH" XDG_CONFIG_HOME="$SB/xdg" -- --socket "$XSOCK"
    if [[ -n $XPID ]]; then
        canary_case "XDG_CONFIG_HOME/mini-swe-agent" "$SB/xdg/mini-swe-agent" "sk-canary-$TAG-xdg" permissive
        expect_refused "[6] --workspace XDG_CONFIG_HOME (holds mini's config directory) is refused" \
            msr "$XSOCK" "$SB/xdg" -- 'echo SHOULD-NOT-RUN'
        stop_xdaemon
    else
        RC=0 OUT= ERR=
        fail "[6] a daemon with XDG_CONFIG_HOME set starts" "$XWHY"
    fi

    # (c) MSWEA_GLOBAL_CONFIG_DIR.
    XSOCK=$T/xs-mswea/sock
    mkdir -m 0700 "$T/xs-mswea"
    start_xdaemon mswea "$T" "$XSOCK" HOME="$SH" XDG_CONFIG_HOME="$SB/xdg" MSWEA_GLOBAL_CONFIG_DIR="$SB/gcfg" \
        -- --socket "$XSOCK"
    if [[ -n $XPID ]]; then
        canary_case "MSWEA_GLOBAL_CONFIG_DIR" "$SB/gcfg" "sk-canary-$TAG-mswea" permissive
        expect_refused "[6] --workspace MSWEA_GLOBAL_CONFIG_DIR is refused" \
            msr "$XSOCK" "$SB/gcfg" -- 'echo SHOULD-NOT-RUN'
        stop_xdaemon
    else
        RC=0 OUT= ERR=
        fail "[6] a daemon with MSWEA_GLOBAL_CONFIG_DIR set starts" "$XWHY"
    fi
fi

check "the main daemon survived every attack" ping_ok
finish

# tests/interactive/tmux.sh: drive the real `mini` in a terminal (tmux)
# against the scripted mock LLM server (tests/mock_llm.py).  Source it
# after tests/lib.sh:
#
#   . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
#   . "$(dirname "${BASH_SOURCE[0]}")/tmux.sh"
#   ui_init "$@"                      # mini_test_init + skips (77) + env choice
#   mock_start '[{"text": "hi", "tool_calls": [{"command": "ls"}]}, ...]'
#   mini_start -t "the task"          # mini in a fresh tmux terminal
#   screen_wait "Run this command?"   # wait for text on the screen
#   keys Enter; type_line "a comment" # press keys; type a line and Enter
#   mini_wait_exit; check_rc NAME 0    # the program's exit status
#   request_has NAME 2 user "a comment" # the 3rd request has such a message
#   ui_finish                          # the summary and the exit status
#
# Each mini runs in its own tmux server (socket in $T), with its own
# global config directory ($T/cfg: history, last trajectory) and a fake
# API key; nothing reaches the network but the mock on 127.0.0.1.

MOCK_PID=
MOCK_PORT=
MOCK_N=0
TMUX_N=0
TMUX_SOCK=
MINI_ENV_ARGS=()
SCREEN=
MINI_RC=

ui_init() {
    mini_test_init "$@"
    have tmux || skip_all "tmux is not installed (apt-get install tmux)"
    have python3 || skip_all "python3 is not installed"
    [[ -x $MINI_BIN/mini ]] || { fail "mini is built" "$MINI_BIN/mini is missing"; finish; }
    # Commands run in the sandbox when it works here, else on the host
    # (MINI_UI_TEST_ENV=local forces the host).
    if [[ ${MINI_UI_TEST_ENV:-} != local ]] && (cd "$WS" && timeout 30 "$MINI_BIN/mini-sandbox" run --workspace "$WS" -- true) >/dev/null 2>&1 </dev/null; then
        # The workspace given explicitly: mini's own working directory (the
        # build tree) may be root's, which a root daemon refuses.
        MINI_ENV_ARGS=(--workspace "$WS")
        UI_ENV=sandbox
    else
        MINI_ENV_ARGS=(--sandbox off)
        UI_ENV=local
    fi
    log "# commands run in: $UI_ENV"
    mkdir -p "$T/cfg" "$T/home"
    cleanup_cmd ui_cleanup
}

mock_stop() {
    if [[ -n $MOCK_PID ]]; then
        kill "$MOCK_PID" 2>/dev/null || true
        wait "$MOCK_PID" 2>/dev/null || true
        MOCK_PID=
    fi
}

# finish, with the mock server stopped first.
ui_finish() {
    mock_stop
    finish
}

ui_cleanup() {
    mock_stop
    local s
    for s in "$T"/tmux.*.sock; do
        [[ -S $s ]] && tmux -S "$s" kill-server 2>/dev/null
    done
    return 0
}

# A UTF-8 locale if the machine has one, for the line editor and the display.
ui_locale() {
    local l
    for l in C.UTF-8 C.utf8 en_US.UTF-8 en_US.utf8; do
        if locale -a 2>/dev/null | grep -qixF "$l"; then
            printf '%s' "$l"
            return 0
        fi
    done
    printf 'C'
}

# mock_start JSON: a fresh mock server with these turns; sets MOCK_PORT and
# REC (the recorded requests, one JSON object per line).
mock_start() {
    mock_stop
    MOCK_N=$((MOCK_N + 1))
    local script=$T/mock.$MOCK_N.json port=$T/mock.$MOCK_N.port
    REC=$T/mock.$MOCK_N.requests.jsonl
    printf '%s\n' "$1" >"$script"
    python3 "$MINI_SOURCE_DIR/tests/mock_llm.py" --script "$script" --record "$REC" --port-file "$port" \
        --max-lifetime 900 >/dev/null 2>"$T/mock.$MOCK_N.log" &
    MOCK_PID=$!
    : >"$REC"
    if ! wait_until 10 test -s "$port"; then
        fail "mock LLM server starts" "$(cat "$T/mock.$MOCK_N.log")"
        finish
    fi
    MOCK_PORT=$(cat "$port")
}

# The mini command line (without the task and test-specific flags).
mini_argv() {
    MINI_ARGV=("$MINI_BIN/mini" -m openai/mock-model -c mini
               -c "model.model_kwargs.api_base=http://127.0.0.1:$MOCK_PORT"
               -c model.cost_tracking=ignore_errors
               -o "$T/traj.json" "${MINI_ENV_ARGS[@]}")
}

# The environment mini gets (in a terminal or not).
MINI_EXTRA_ENV=()
mini_env() {
    MINI_ENVV=(env -i PATH="$PATH" HOME="$T/home" TERM="${UI_TERM:-screen}" LANG="$(ui_locale)"
               OPENAI_API_KEY=sk-test-mock MSWEA_GLOBAL_CONFIG_DIR="$T/cfg" MINI_RETRY_BASE_MS=10
               MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT=2
               MINI_TEST_RUN_ID="$MINI_TEST_RUN_ID" "${MINI_EXTRA_ENV[@]}")
}

# mini_start ARGS...: mini with these extra arguments in a new terminal
# (150x50); waits until it has started.
mini_start() {
    TMUX_N=$((TMUX_N + 1))
    TMUX_SOCK=$T/tmux.$TMUX_N.sock
    MINI_RC=
    rm -f "$T/traj.json"
    mini_argv
    mini_env
    local cmd q
    q=$(printf '%q ' "${MINI_ENVV[@]}" "${MINI_ARGV[@]}" "$@")
    cmd="cd $(printf '%q' "$WS") && exec $q"
    # A server of our own; the pane stays after mini exits, to read its status.
    tmux -S "$TMUX_SOCK" -f /dev/null new-session -d -x 150 -y 50 -s t "sleep 1000"
    tmux -S "$TMUX_SOCK" set-option -g remain-on-exit on
    tmux -S "$TMUX_SOCK" set-option -g history-limit 20000
    tmux -S "$TMUX_SOCK" respawn-pane -k -t t "$cmd"
}

tm() { tmux -S "$TMUX_SOCK" "$@"; }

# The whole screen with its scrollback, as text (colours with -e).
screen() { SCREEN=$(tm capture-pane -p -J -S -20000 -t t "$@" 2>/dev/null || true); }

screen_has() {
    screen
    [[ $SCREEN == *"$1"* ]]
}

# How often TEXT is on the screen.
screen_count() {
    screen
    local n=0 rest=$SCREEN
    while [[ $rest == *"$1"* ]]; do
        n=$((n + 1))
        rest=${rest#*"$1"}
    done
    printf '%s' "$n"
}

# screen_wait TEXT [SECONDS] [COUNT]: until TEXT is on the screen (COUNT
# times).  When it does not come, the check "screen shows: TEXT" fails and
# the script ends there (what follows would only wait in vain).
screen_wait() {
    local text=$1 secs=${2:-30} count=${3:-1}
    if wait_until "$secs" screen_count_ge "$text" "$count"; then
        return 0
    fi
    screen
    fail "screen shows: $text" "waited $secs s for it (${count}x); the screen (last 40 lines):" \
        "$(printf '%s\n' "$SCREEN" | tail -n 40 | sed 's/^/    | /')"
    mini_where
    ui_finish
}
screen_count_ge() { (( $(screen_count "$1") >= $2 )); }

keys() { tm send-keys -t t "$@"; }
type_line() {
    tm send-keys -t t -l -- "$1"
    tm send-keys -t t Enter
}

# The pane's program (mini: the pane execs it) has exited; ZOMBIE_RC is
# its status when tmux has not reaped it yet (tmux 3.3 at times leaves an
# exited pane's process unreaped; /proc still has the status: field 52).
ZOMBIE_RC=
pane_dead() {
    local st
    st=$(tm display-message -p -t t '#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}:#{pane_pid}' 2>/dev/null) ||
        return 1
    [[ $st == 1:?*:*:* || $st == 1::?*:* ]] && return 0
    local pid=${st##*:} stat
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    local f=($stat)
    [[ ${f[0]} == Z && -n ${f[49]:-} ]] || return 1
    local code=${f[49]}
    if (( code & 0x7f )); then ZOMBIE_RC="signal $((code & 0x7f))"; else ZOMBIE_RC=$(((code >> 8) & 0xff)); fi
    return 0
}

# Where mini is stuck, for a failure report.
mini_where() {
    local pid task
    pid=$(tm display-message -p -t t '#{pane_pid}' 2>/dev/null || true)
    [[ -n $pid && -d /proc/$pid ]] || return 0
    local ppid
    ppid=$(awk '/^PPid:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
    log "#   mini (pid $pid): parent $ppid ($(cat "/proc/$ppid/comm" 2>/dev/null)," \
        "state $(awk '{print $3}' "/proc/$ppid/stat" 2>/dev/null), waiting in $(cat "/proc/$ppid/wchan" 2>/dev/null))"
    local tty p
    tty=$(tm display-message -p -t t '#{pane_tty}' 2>/dev/null || true)
    if [[ -n $tty ]]; then
        for p in /proc/[0-9]*; do
            if ls -l "$p/fd" 2>/dev/null | grep -q -- "-> $tty\$"; then
                log "#   $tty is open in pid ${p#/proc/} ($(tr '\0' ' ' <"$p/cmdline" 2>/dev/null | cut -c1-100))"
            fi
        done
    fi
    for task in /proc/"$pid"/task/*; do
        log "#   mini (pid $pid) thread ${task##*/}: state $(awk '{print $3}' "$task/stat" 2>/dev/null)," \
            "waiting in $(cat "$task/wchan" 2>/dev/null)"
    done
    return 0
}

# mini_wait_exit [SECONDS]: wait until mini has exited; MINI_RC is its
# status ("timeout" when it did not exit, for check_rc to report).
mini_wait_exit() {
    local secs=${1:-60}
    MINI_RC=timeout
    ZOMBIE_RC=
    if wait_until "$secs" pane_dead; then
        if [[ -n $ZOMBIE_RC ]]; then
            MINI_RC=$ZOMBIE_RC
        else
            MINI_RC=$(tm display-message -p -t t '#{pane_dead_status}')
            [[ -n $MINI_RC ]] || MINI_RC="signal $(tm display-message -p -t t '#{pane_dead_signal}')"
        fi
    else
        mini_where
    fi
    screen
    return 0
}

# check_rc NAME WANT: mini exited with status WANT.
check_rc() {
    RC=$MINI_RC OUT=$(printf '%s\n' "$SCREEN" | tail -n 30) ERR=
    if [[ $MINI_RC == "$2" ]]; then pass "$1"; else fail "$1" "expected exit status $2, got $MINI_RC"; fi
}

# The number of requests the mock has received.
n_requests() {
    local n
    n=$(grep -c . "$REC" 2>/dev/null) || true
    printf '%s' "${n:-0}"
}

# request_py INDEX PYTHON-EXPR: evaluate EXPR with `msgs` = the messages of
# request INDEX (0-based; -1: the last), `req` = the whole request; prints
# the value.
request_py() {
    python3 - "$REC" "$1" "$2" <<'PY'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
i = int(sys.argv[2])
req = reqs[i] if -len(reqs) <= i < len(reqs) else {"body": {"messages": []}}
msgs = (req.get("body") or {}).get("messages") or []
def text(m):
    c = m.get("content")
    if isinstance(c, list):
        return "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return c or ""
print(eval(sys.argv[3]))
PY
}

# request_has NAME INDEX ROLE TEXT: request INDEX carries a ROLE message
# containing TEXT.
request_has() {
    local name=$1 idx=$2 role=$3 want=$4 got
    got=$(WANT=$want ROLE=$role request_py "$idx" \
        'any(m.get("role") == __import__("os").environ["ROLE"] and __import__("os").environ["WANT"] in text(m) for m in msgs)' 2>&1)
    RC=0 OUT=$(request_py "$idx" '"\n".join(m.get("role", "?") + ": " + text(m)[:150].replace("\n", " ") for m in msgs[2:])' 2>&1) ERR=
    if [[ $got == True ]]; then pass "$name"; else fail "$name" "request $idx has no $role message containing: $want"; fi
}

# traj_py PYTHON-EXPR: evaluate EXPR with `t` = the saved trajectory.
traj_py() {
    python3 - "$T/traj.json" "$1" <<'PY'
import json, sys
try:
    t = json.load(open(sys.argv[1]))
except Exception as e:
    t = {"info": {}, "messages": [], "error": str(e)}
print(eval(sys.argv[2]))
PY
}

check_traj_status() {
    local got
    got=$(traj_py 't["info"].get("exit_status")')
    RC=0 OUT=$got ERR=
    if [[ $got == "$2" ]]; then pass "$1"; else fail "$1" "expected exit_status $2 in the trajectory, got $got"; fi
}

# A tool-call turn of the mock script running COMMAND, with TEXT.
turn() { python3 -c 'import json,sys; print(json.dumps({"text": sys.argv[1], "tool_calls": [{"command": c} for c in sys.argv[2:]]}))' "$@"; }
submit_turn() { turn "${1:-Done.}" "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; echo ${2:-all done}"; }
turns() { local IFS=,; printf '[%s]' "$*"; }

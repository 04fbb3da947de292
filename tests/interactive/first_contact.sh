#!/usr/bin/env bash
# What a new user of mini meets first (the agent's side):
#  1. model retries are announced on stderr, one line each (what failed,
#     attempt N of M, the wait); a refused connection to a server on this
#     machine at the first request says so at once; the API key is never
#     in a message;
#  2. a default trajectory place that cannot be written (HOME unusable, as
#     on CI runners) is one line before any model request;
#  3. a config that is not found: the name, each place searched once, and
#     a directory called a directory;
#  4. --sandbox with an unknown profile: a usage error (2) before the API
#     key is looked at, with the profiles and the closest name;
#  5. TERM=dumb: no escape sequences, even on a terminal;
#  6. stdout not a terminal: no "running (Ctrl-C interrupts)" line, no
#     "\r...\033[K" progress line;
#  7. a command's output is shown once: live on a terminal (the observation
#     then only named), as the observation in a pipe (also for the demo);
#  8. -q: only the result and the summary; -v: each request's outcome and
#     time; together: a usage error;
#  9. the quick start's scripts/demo.sh does not need root when every
#     package is there (scripts/install-deps.sh).
# Commands run on the host (--sandbox off): nothing here is about the sandbox.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/tmux.sh"
MINI_UI_TEST_ENV=local
ui_init "$@"

tag=$RUN_TAG
CMD_TIMEOUT=60
KEY=sk-test-mock

# mini_pipe ARGS...: mini with stdin from /dev/null and stdout, stderr to
# files (bounded; output in OUT/ERR).
mini_pipe() {
    mini_argv
    mini_env
    run bounded "${MINI_ENVV[@]}" "${MINI_ARGV[@]}" "$@" </dev/null
}

# count TEXT HAYSTACK: how often TEXT is in HAYSTACK.
count() {
    local n=0 rest=$2
    while [[ $rest == *"$1"* ]]; do
        n=$((n + 1))
        rest=${rest#*"$1"}
    done
    printf '%s' "$n"
}

# A port on 127.0.0.1 where nothing listens.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# ---- 1. retries ------------------------------------------------------------
mock_start "$(turns '{"status": 503}' '{"status": 500, "message": "boom"}' \
                    "$(turn "Look." "echo ran-$tag")" "$(submit_turn "Done." "result-$tag")")"
MINI_EXTRA_ENV=(MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT=5)
mini_pipe -y -t "look around"
if [[ $RC == 0 ]] &&
   contains "$ERR" "mini: model openai/mock-model: HTTP 503: The service is temporarily unavailable. (server_error) (attempt 1 of 5; next try in 40 ms)" &&
   contains "$ERR" "mini: model openai/mock-model: HTTP 500: boom (server_error) (attempt 2 of 5; next try in 40 ms)"; then
    pass "each retry is one line on stderr: what failed, attempt N of M, the wait"
else
    fail "each retry is one line on stderr: what failed, attempt N of M, the wait"
fi
check "the retries are not on stdout" test "$(count "attempt 1 of" "$OUT")" -eq 0
check "the API key is in no message" test "$(count "$KEY" "$OUT$ERR")" -eq 0

mock_start "$(turns '{"status": 503}' '{"status": 503}' '{"status": 503}')"
MINI_EXTRA_ENV=(MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT=3)
mini_pipe -y -t "look around"
if [[ $RC == 1 ]] && contains "$ERR" "(attempt 2 of 3; next try in" && ! contains "$ERR" "attempt 3 of 3" &&
   contains "$ERR" "failed 3 times; last error: HTTP 503"; then
    pass "the last failed attempt is the error, not announced as a retry"
else
    fail "the last failed attempt is the error, not announced as a retry"
fi

# Refused on this machine at the first request: said at once, no retries,
# even with the default (slow) backoff.
port=$(free_port)
MINI_EXTRA_ENV=(MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT=10 MINI_RETRY_BASE_MS=1000)
for base in "http://127.0.0.1:$port/v1" "http://localhost:$port/v1"; do
    mini_argv
    mini_env
    start=$(now_ms)
    run bounded "${MINI_ENVV[@]}" "${MINI_ARGV[@]}" -c "model.model_kwargs.api_base=$base" -y -t "hi" </dev/null
    took=$(( $(now_ms) - start ))
    want="mini: model openai/mock-model: nothing listens at $base (connection refused); is the server running?"
    if [[ $RC == 1 ]] && contains "$ERR" "$want" && ! contains "$ERR" "attempt 1 of" && (( took < 5000 )); then
        pass "nothing listens at $base: said at once (${took} ms), status 1"
    else
        fail "nothing listens at $base: said at once, status 1" "expected on stderr within 5 s: $want (took $took ms)"
    fi
done
# OPENAI_BASE_URL the same.
MINI_EXTRA_ENV=(OPENAI_BASE_URL="http://127.0.0.1:$port/v1")
mini_env
run bounded "${MINI_ENVV[@]}" "$MINI_BIN/mini" -m gpt-4o -c mini -c model.cost_tracking=ignore_errors --sandbox off \
    -o "$T/traj.json" -y -t hi </dev/null
if [[ $RC == 1 ]] && contains "$ERR" "nothing listens at http://127.0.0.1:$port/v1 (connection refused)"; then
    pass "OPENAI_BASE_URL where nothing listens: said at once"
else
    fail "OPENAI_BASE_URL where nothing listens: said at once"
fi

# Refused later in the run (the server went away): announced retries.
mock_start "$(turns "$(turn "Stop the server." "kill \$(cat '$T/mock.pid')")")"
printf '%s\n' "$MOCK_PID" >"$T/mock.pid"
MINI_EXTRA_ENV=(MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT=2)
mini_pipe -y -t "stop it"
if [[ $RC == 1 ]] && contains "$ERR" "(attempt 1 of 2; next try in 40 ms)" && contains "$ERR" "failed 2 times"; then
    pass "a refusal after the first answer is retried, each retry announced"
else
    fail "a refusal after the first answer is retried, each retry announced"
fi
MOCK_PID=

# ---- 2. the default trajectory place ----------------------------------------
mock_start "$(turns "$(submit_turn)")"
printf 'not a directory\n' >"$T/homefile"
# mini_argv without -o: the default place
NO_O=("$MINI_BIN/mini" -m openai/mock-model -c mini -c "model.model_kwargs.api_base=http://127.0.0.1:$MOCK_PORT"
      -c model.cost_tracking=ignore_errors "${MINI_ENV_ARGS[@]}")
run bounded env -i PATH="$PATH" HOME="$T/homefile" TERM=dumb OPENAI_API_KEY=$KEY "${NO_O[@]}" -y -t hi </dev/null
if [[ $RC == 1 && $(printf '%s\n' "$ERR" | grep -c .) == 1 ]] &&
   contains "$ERR" "mini: trajectory $T/homefile/.config/mini-swe-agent/last_mini_run.traj.json: creating $T/homefile/.config:" &&
   contains "$ERR" "give another place with -o FILE"; then
    pass "HOME unusable, no -o: one line naming the place and the remedy, status 1"
else
    fail "HOME unusable, no -o: one line naming the place and the remedy, status 1"
fi
check "no model request was made" test "$(n_requests)" -eq 0
mkdir -p "$T/outdir"
mini_env
run bounded "${MINI_ENVV[@]}" "${NO_O[@]}" -o "$T/outdir" -y -t hi </dev/null
if [[ $RC == 1 ]] && contains "$ERR" "mini: trajectory $T/outdir: is a directory" && [[ $(n_requests) == 0 ]]; then
    pass "-o DIR: refused before any model request"
else
    fail "-o DIR: refused before any model request"
fi

# ---- 3. a config that is not found -------------------------------------------
mini_env
run bounded "${MINI_ENVV[@]}" "$MINI_BIN/mini" -c "no-such-config-$tag" -t hi </dev/null
n=$(count "no-such-config-$tag.yaml" "$ERR")
# (A bare name is not looked for in the current directory: the places are
# the built-in directories.)
if [[ $RC == 2 ]] && contains "$ERR" "config \"no-such-config-$tag\" not found (tried: /" &&
   contains "$ERR" "/extra/no-such-config-$tag.yaml, " && [[ $(count "./no-such" "$ERR") == 0 ]] &&
   [[ $(count "tried: no-such" "$ERR") == 0 && $(count ", no-such" "$ERR") == 0 ]]; then
    pass "config not found: the name and the places ($n), status 2"
else
    fail "config not found: the name and the places, status 2"
fi
mkdir -p "$T/cfgdir"
run bounded "${MINI_ENVV[@]}" "$MINI_BIN/mini" -c "$T/cfgdir" -t hi </dev/null
if [[ $RC == 2 && $ERR == "mini: config \"$T/cfgdir\" not found: $T/cfgdir is a directory, not a config file (tried: $T/cfgdir.yaml)" ]]; then
    pass "config naming a directory: said so, the place once"
else
    fail "config naming a directory: said so, the place once"
fi

# ---- 4. --sandbox with an unknown profile --------------------------------------
run bounded env -i PATH="$PATH" HOME="$T/home" MSWEA_GLOBAL_CONFIG_DIR="$T/cfg" "$MINI_BIN/mini" -m gpt-4o \
    --sandbox stict -y -t hi </dev/null
if [[ $RC == 2 ]] && contains "$ERR" "mini: --sandbox stict: no such sandbox profile; did you mean strict?" &&
   contains "$ERR" "standard" && ! contains "$ERR" "API key"; then
    pass "--sandbox stict (no API key set): usage error 2, the closest profile and the list"
else
    fail "--sandbox stict (no API key set): usage error 2, the closest profile and the list"
fi
run bounded env -i PATH="$PATH" HOME="$T/home" MSWEA_GLOBAL_CONFIG_DIR="$T/cfg" "$MINI_BIN/mini" -m gpt-4o \
    --sandbox nosuch -y -t hi </dev/null
if [[ $RC == 2 ]] && contains "$ERR" "--sandbox nosuch: no such sandbox profile (built-in: " && ! contains "$ERR" "API key"; then
    pass "--sandbox nosuch: usage error 2 with the profiles"
else
    fail "--sandbox nosuch: usage error 2 with the profiles"
fi

# ---- 6, 7. a pipe: no live lines, each output once --------------------------------
mock_start "$(turns "$(turn "Look." "echo out-$tag")" "$(submit_turn "Done." "result-$tag")")"
MINI_EXTRA_ENV=()
mini_pipe -y -t "look around"
if [[ $RC == 0 ]] && ! contains "$OUT" "Ctrl-C interrupts" && ! contains "$OUT" $'\r' && ! contains "$OUT" $'\e'; then
    pass "stdout not a terminal: no running line, no progress line, no escapes"
else
    fail "stdout not a terminal: no running line, no progress line, no escapes"
fi
# "echo out-TAG" once as the command, "out-TAG" once more as its output.
if [[ $(printf '%s\n' "$OUT" | grep -cx "out-$tag") == 1 ]]; then
    pass "in a pipe a command's output is shown once (as the observation)"
else
    fail "in a pipe a command's output is shown once (as the observation)"
fi

# The demo's run (replayed), in a pipe: its first command's output once.
dws=$T/demo
mkdir -p "$dws"
cp -r "$MINI_SOURCE_DIR/demo/calc/." "$dws/"
mini_env
run bounded "${MINI_ENVV[@]}" "$MINI_BIN/mini" --sandbox off --workspace "$dws" -y --exit-immediately \
    -c mini_textbased --model-class replay -c "model.replay_path=$MINI_SOURCE_DIR/demo/calc.traj.json" \
    -t "$(cat "$MINI_SOURCE_DIR/demo/task.txt")" -o "$T/demo.traj.json" </dev/null
if [[ $RC == 0 && $(count "AssertionError: 2.0 != 2.5" "$OUT") == 1 ]]; then
    pass "the demo's run in a pipe shows the failing test's output once"
else
    fail "the demo's run in a pipe shows the failing test's output once" \
        "$(count "AssertionError: 2.0 != 2.5" "$OUT") times"
fi

# ---- 8. -q and -v -------------------------------------------------------------------
mock_start "$(turns '{"status": 503}' "$(turn "Look." "echo out-$tag")" "$(submit_turn "Done." "result-$tag")")"
mini_pipe -q -y -t "look around"
if [[ $RC == 0 && $OUT == "result-$tag" ]] && ! contains "$ERR" "attempt 1 of" &&
   [[ $(printf '%s\n' "$ERR" | grep -c .) == 1 ]] && contains "$ERR" "mini: Submitted after 2 model calls"; then
    pass "-q: the submission on stdout, the summary alone on stderr"
else
    fail "-q: the submission on stdout, the summary alone on stderr"
fi
mock_start "$(turns '{"status": 503}' "$(turn "Look." "echo out-$tag")" "$(submit_turn "Done." "result-$tag")")"
mini_pipe --verbose -y -t "look around"
if [[ $RC == 0 ]] && contains "$ERR" "chat/completions: HTTP 503 after " && contains "$ERR" "chat/completions: HTTP 200 after " &&
   contains "$ERR" "(attempt 1 of 2; next try in" && contains "$OUT" "out-$tag"; then
    pass "-v: each request's outcome and time on stderr"
else
    fail "-v: each request's outcome and time on stderr"
fi
mini_pipe -v -q -y -t "look around"
if [[ $RC == 2 ]] && contains "$ERR" "cannot be used together"; then pass "-v with -q: usage error 2"
else fail "-v with -q: usage error 2"; fi
expect_out "--help lists -v and -q" "-q, --quiet" bounded "$MINI_BIN/mini" --help

# ---- 9. the quick start -----------------------------------------------------------------
# scripts/demo.sh runs scripts/install-deps.sh first: with every package
# present it must not need root (a newcomer is rarely root).
if [[ $("$MINI_SOURCE_DIR/scripts/install-deps.sh" 2>&1 </dev/null) != "install-deps: all packages present" ]] && is_root; then
    skip "install-deps.sh as an ordinary user" "packages are missing here"
elif is_root; then
    mini_setpriv_cmd
    run bounded "${SETPRIV[@]}" "$MINI_SOURCE_DIR/scripts/install-deps.sh" </dev/null
    if [[ $RC == 0 && $OUT == "install-deps: all packages present" ]]; then
        pass "install-deps.sh as an ordinary user, every package present: status 0 (the demo goes on)"
    else
        fail "install-deps.sh as an ordinary user, every package present: status 0 (the demo goes on)"
    fi
else
    run bounded "$MINI_SOURCE_DIR/scripts/install-deps.sh" </dev/null
    if [[ $RC == 0 || $ERR == *"sudo apt-get install"* ]]; then
        pass "install-deps.sh as an ordinary user: done, or names only the missing packages"
    else
        fail "install-deps.sh as an ordinary user: done, or names only the missing packages"
    fi
fi

# ---- 5, 7. a terminal -------------------------------------------------------------------
mock_start "$(turns "$(turn "Look." "echo live-$tag")" "$(submit_turn "Done." "result-$tag")")"
mini_start -y --exit-immediately -t "look around"
mini_wait_exit
check_rc "a terminal run ends: status 0" 0
check "on a terminal the command's output is shown once (live)" test "$(screen_count "live-$tag")" -eq 2
check "the observation is named, its text not repeated" screen_has "Tool: (the output above)"
check "on a terminal the running line is shown" screen_has "running (Ctrl-C interrupts)"
screen -e
check "colours on a terminal (TERM=screen)" contains "$SCREEN" $'\e['

# A command that timed out keeps its observation: it says what happened.
mock_start "$(turns "$(turn "Wait." "echo early-$tag; sleep 30")" "$(submit_turn "Done." "result-$tag")")"
mini_start -y --exit-immediately -c environment.timeout=1 -t "wait"
mini_wait_exit
check_rc "a run with a timed-out command ends: status 0" 0
check "a timed-out command's observation is shown (it says so)" screen_has "timed out after 1 seconds"

UI_TERM=dumb
mock_start "$(turns "$(turn "Look." "echo live-$tag")" "$(submit_turn "Done." "result-$tag")")"
mini_start -y --exit-immediately -t "look around"
mini_wait_exit
check_rc "TERM=dumb: the run ends, status 0" 0
screen -e
if [[ $SCREEN == *$'\e'* ]]; then fail "TERM=dumb: no escape sequences on the terminal"
else pass "TERM=dumb: no escape sequences on the terminal"; fi
UI_TERM=

ui_finish

#!/bin/bash
# A seccomp program that fails to compile when a session opens.  The
# daemon clones the first sandbox of a new policy before it compiles the
# program (docs/sandbox-lifecycle.md, "Opening a session" and "The
# seccomp program cache"), so a failed compile must fail the open with its reason, kill that
# sandbox and leave nothing, while sessions of programs already compiled
# go on; and the same policy must compile on a later open.
#
# The fault: mini-sandboxd runs with LD_PRELOAD=mini-test-fail-export.so
# (fail_export.c), whose seccomp_export_bpf fails while a flag file
# exists.
#
#  1. with the flag: an open of a new policy fails with the reason; a
#     session opened before keeps running commands; an open of a policy
#     already compiled succeeds
#  2. mini-sandbox run --profile FILE (a new policy) exits 125 with the
#     reason and runs nothing
#  3. nothing is left: no sandbox of the daemon, no session; it answers
#  4. without the flag: the policy that failed now opens, and its program
#     is loaded (its extra denied call refused)
#
# Prints "N passed, N failed".
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
have python3 || skip_all "python3 is missing"

PRELOAD=$MINI_BUILD_DIR/tests/reliability/mini-test-fail-export.so
FLAG=$T/fail-export
if [[ ! -r $PRELOAD ]]; then
    fail "the fault library is built" "$PRELOAD is missing"
    finish
fi
DAEMON_WRAPPER="env LD_PRELOAD=$PRELOAD MINI_TEST_FAIL_EXPORT=$FLAG" start_daemon

# A profile file: strict with one more denied call (a policy of its own).
profile_denying() {   # NAME FILE
    python3 - "$MINI_SOURCE_DIR/profiles/strict.json" "$1" "$2" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["seccomp"]["deny"].append(sys.argv[2])
json.dump(p, open(sys.argv[3], "w"))
PY
}
profile_denying msgget "$T/strict-msgget.json"
profile_denying msgsnd "$T/strict-msgsnd.json"

# 1 and 4, through the protocol: one line per check, "ok NAME" or
# "FAIL NAME: DETAIL".
run bounded python3 - "$MINI_SOURCE_DIR/tests/integration" "$SOCK" "$WS" "$FLAG" "$T/strict-msgget.json" <<'PY'
import json, os, sys
sys.path.insert(0, sys.argv[1])
import pool_client
sock, ws, flag, prof = sys.argv[2:6]
msgget = json.load(open(prof))
probe = ("python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True); "
         "r = l.syscall(68, 0, 0o600); print(r, ctypes.get_errno())'")


def check(name, ok, detail=""):
    print(("ok " if ok else "FAIL ") + name + ("" if ok else f": {detail}"), flush=True)


c = pool_client.connect(sock)
held = c.open(ws, profile="strict")
r = c.run(held, "echo before", timeout=30)
check("[1] a strict session runs a command before the fault", r["output"] == "before\n", r)
open(flag, "w").close()
try:
    s = c.reply(c.request("open", workspace=ws, profile_data=msgget))["session"]
    check("[1] an open of a new policy fails while its program does not compile", False, f"opened {s}")
except pool_client.DaemonError as e:
    msg = str(e)
    check("[1] an open of a new policy fails while its program does not compile, with the reason",
          "seccomp" in msg and "export" in msg, msg)
r = c.run(held, "echo still", timeout=30)
check("[1] the session opened before still runs commands", r["returncode"] == 0 and r["output"] == "still\n", r)
s2 = c.open(ws, profile="strict")
r = c.run(s2, "echo cached", timeout=30)
check("[1] an open of a policy already compiled succeeds", r["output"] == "cached\n", r)
c.close_session(s2)
c.close_session(held)
os.unlink(flag)
s3 = c.reply(c.request("open", workspace=ws, profile_data=msgget))["session"]
r = c.run(s3, probe, timeout=30)
check("[4] without the fault the same policy opens, and its program is loaded (msgget refused)",
      r["returncode"] == 0 and r["output"].split()[:2] == ["-1", "1"], r)
c.close_session(s3)
c.close()
PY
while read -r word rest; do
    case $word in
    ok) pass "$rest" ;;
    FAIL) fail "${rest%%: *}" "${rest#*: }" ;;
    esac
done <<<"$OUT"
(( $(grep -c '^ok \|^FAIL ' <<<"$OUT") == 5 )) || fail "the protocol checks all ran" "status $RC: $ERR"

# 2. the client, with a profile file of another new policy
touch "$FLAG"
run sbx --profile "$T/strict-msgsnd.json" -- "touch $WS/ran-$RUN_TAG"
if [[ $RC == 125 && $ERR == *seccomp* && $ERR == *export* && ! -e $WS/ran-$RUN_TAG ]]; then
    pass "[2] mini-sandbox run --profile FILE: 125 with the reason, nothing run"
else
    fail "[2] mini-sandbox run --profile FILE: 125 with the reason, nothing run" "rc $RC: $ERR"
fi
rm -f "$FLAG"

# 3. nothing left
if wait_until 10 no_sandbox_of_ours; then
    pass "[3] no sandbox of the daemon is left"
else
    fail "[3] no sandbox of the daemon is left" "$(our_sandbox_pids | tr '\n' ' ')"
fi
run "$MINI_BIN/mini-sandbox" stats --socket "$SOCK"
if [[ $RC == 0 ]] && python3 -c 'import json, sys; d = json.load(sys.stdin); sys.exit(d["sessions"] != 0 or d["running"] != 0)' <<<"$OUT"; then
    pass "[3] the daemon answers, with no session and nothing running"
else
    fail "[3] the daemon answers, with no session and nothing running" "rc $RC: $OUT"
fi
if grep -q "exporting the program" "$DAEMON_LOG"; then
    pass "[3] the daemon's log says why the opens failed"
else
    fail "[3] the daemon's log says why the opens failed" "$(tail -n 5 "$DAEMON_LOG")"
fi
finish

#!/bin/bash
# Workspace disk use (issue P7c, finding 5): mini sets no disk quota on a
# workspace yet, so `file_size` bounds one file and nothing bounds the
# sum.  What must hold is that this is reported, never implied away:
# `mini-sandbox check` has a "workspace quota" row and machine.workspace_quota
# in --json, and every `opened` reply has isolation.workspace_quota, each
# with enforced false and the reason for this filesystem.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
have python3 || skip_all "python3 is missing"

run bash -c "cd '$WS' && '$MINI_BIN/mini-sandbox' check --json"
q=$(printf '%s' "$OUT" | python3 -c 'import json,sys; q=json.load(sys.stdin)["machine"]["workspace_quota"]; print(q["enforced"], "file_size" in q["reason"])' 2>&1)
expect_eq_val() { if [[ $2 == "$3" ]]; then pass "$1"; else fail "$1" "got: $2"; fi; }
expect_eq_val "check --json: machine.workspace_quota says not enforced, and why" "$q" "False True"
run bash -c "cd '$WS' && '$MINI_BIN/mini-sandbox' check"
if contains "$OUT" "workspace quota (cwd)"; then pass "check: the table has the workspace quota row"
else fail "check: the table has the workspace quota row"; fi

start_daemon
run bounded env PYTHONPATH="$MINI_SOURCE_DIR/tests/integration" python3 -B -c '
import sys
from pool_client import connect
c = connect(sys.argv[1])
r = c.reply(c.request("open", workspace=sys.argv[2], profile="strict"))
q = r["isolation"]["workspace_quota"]
print(q["enforced"], "file_size" in q["reason"])
' "$SOCK" "$WS"
expect_eq_val "opened: isolation.workspace_quota says not enforced, and why" "$OUT" "False True"
finish

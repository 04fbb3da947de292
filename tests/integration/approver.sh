#!/bin/bash
# A test approver for tests/integration/policy.sh: what it does depends on
# the word ask-MODE in the command it is asked about:
#   ask-allow    {"decision": "allow", ...}        ask-deny  {"decision": "deny", ...}
#   ask-crash    exits 3 without answering         ask-kill  dies of SIGKILL
#   ask-hang     sleeps past any timeout (a child too): $2 seconds (default
#                60; a value of the caller's own, to find the sleeps by)
#   ask-garbage  answers something that is not JSON
# and answers that are nearly one allow (tests/security/approver_strict.sh):
#   ask-nulesc   "allow\u0000x"                 ask-nulraw  "allow", a NUL, "x"
#   ask-trailing an allow, then text             ask-two     an allow, then a deny
#   ask-dup      "decision" twice (deny, allow)  ask-spaced  an allow, blank lines after
# Each request is appended to $1 (a file) when given.
IFS= read -r req
[[ -n ${1:-} ]] && printf '%s\n' "$req" >>"$1"
cmd=$(printf '%s' "$req" | python3 -c 'import json, sys; print(json.load(sys.stdin)["command"])')
case $cmd in
*ask-allow*) echo '{"decision": "allow", "reason": "looks fine to the test", "by": "test-approver"}' ;;
*ask-deny*) echo '{"decision": "deny", "reason": "the test says no", "by": "test-approver"}' ;;
*ask-crash*) exit 3 ;;
*ask-kill*) kill -KILL $$ ;;
*ask-hang*) sleep "${2:-60}" & sleep "${2:-60}" ;;
*ask-garbage*) echo 'yes please!' ;;
*ask-nulesc*) printf '%s\n' '{"decision": "allow\u0000x", "by": "test-approver"}' ;;
*ask-nulraw*) printf '{"decision": "allow\000x", "by": "test-approver"}\n' ;;
*ask-trailing*) echo '{"decision": "allow", "by": "test-approver"} trailing garbage' ;;
*ask-two*) printf '%s\n' '{"decision": "allow", "by": "test-approver"}' '{"decision": "deny"}' ;;
*ask-dup*) echo '{"decision": "deny", "decision": "allow", "by": "test-approver"}' ;;
*ask-spaced*) printf '%s\n\n  \n' '{"decision": "allow", "reason": "fine, with blank lines after", "by": "test-approver"}' ;;
*) echo '{"decision": "deny", "reason": "unknown test mode"}' ;;
esac

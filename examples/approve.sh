#!/bin/sh
# An approver for mini's policy (policy.approver, docs/config.md): mini runs
# it for each command a rule says `ask` about when no person answers, writes
# one JSON object on its stdin, and reads one JSON object from its stdout:
#
#   in:  {"run": ..., "task": ..., "step": 3, "command": "pip install x",
#         "rule": "policy.rules[1]", "reason": ..., "profile": ..., "cwd": ...,
#         "messages": [{"role": ..., "content": ...}, ...]}
#   out: {"decision": "allow" | "deny", "reason": "...", "by": "..."}
#
# No answer within policy.approver_timeout, a crash, a non-zero exit or
# anything but such an object counts as deny.  This one allows a single
# simple command (no ; & | ` $ ( ) < > \ and no second line) matching
# APPROVE_ALLOW (an extended regular expression; default: read-only
# look-arounds and installs from the package index) and denies the rest;
# each request is appended to APPROVE_LOG when that is set.  A Slack bot or
# a web page plugs in the same way: post the request, wait for a click,
# print the answer.
#
#   policy:
#     rules: [{match: '^pip install', verdict: ask}]
#     approver: examples/approve.sh
set -u
allow=${APPROVE_ALLOW:-'^(ls|cat|grep|git (status|diff|log)|pip install)( |$)'}
IFS= read -r request || [ -n "$request" ] || { echo '{"decision": "deny", "reason": "no request"}'; exit 0; }
[ -n "${APPROVE_LOG:-}" ] && printf '%s\n' "$request" >>"$APPROVE_LOG"
# The command, decoded from JSON (python3 when there, else a plain sed for
# commands without escapes).
if command -v python3 >/dev/null 2>&1; then
    command=$(printf '%s' "$request" | python3 -c 'import json, sys; print(json.load(sys.stdin)["command"])')
else
    command=$(printf '%s' "$request" | sed -n 's/.*"command":"\([^"\\]*\)".*/\1/p')
fi
# One simple command only: a second line, a separator, a substitution or a
# redirection could hide something else behind an allowed start.
if [ "$(printf '%s\n' "$command" | wc -l)" -ne 1 ] || printf '%s' "$command" | grep -q '[;&|`$()<>\\]'; then
    echo '{"decision": "deny", "reason": "not a single simple command", "by": "approve.sh"}'
elif printf '%s\n' "$command" | grep -Eq -- "$allow"; then
    echo '{"decision": "allow", "reason": "matches APPROVE_ALLOW", "by": "approve.sh"}'
else
    echo '{"decision": "deny", "reason": "not on the approver'"'"'s list (APPROVE_ALLOW)", "by": "approve.sh"}'
fi

#!/bin/bash
# Host-side writes at paths a sandboxed command can reach.  Whatever the
# sandbox writes (the workspace and everything under it) is hostile to the
# host side: a sandboxed command plants symlinks, hard links, FIFOs or files
# of its own where mini, mini inspect, mini batch, mini-sandbox or the
# daemon write next.  Each attack aims at a victim file outside the
# workspace ($T/victim, standing for ~/.bashrc), which must stay as it was
# (content and mtime), and the writer says why it refused.
#
#  1. policy.audit_log in the workspace (as docs/config.md shows it): the
#     sandboxed command itself replaces it with a symlink to the victim;
#     the next run refuses it.  Also a hard link to the victim, a FIFO, and
#     (as root) a file of another user.
#  2. mini-sandbox run --policy with an audit_log planted as a link, and
#     the daemon's own --audit-log.
#  3. mini inspect --html OUT.html with OUT.html.tmp planted as a link.
#  4. the trajectory (-o ws/out/traj.json): traj.json.tmp and traj.json
#     planted as links; and the sandboxed command swaps the directory `out`
#     for a symlink between two saves: the saves stay in the directory the
#     run started with; a directory link planted by an earlier run
#     (ws/out -> elsewhere) is refused, for the trajectory and the audit log.
#  5. mini batch's output folder: summary.json and preds.json planted as
#     links, and its lock file as a dangling link (nothing is created where
#     it points).
#
# Runs as the invoking user and rootless (mini_e2e_test).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
. "$MINI_SOURCE_DIR/tests/integration/agent_lib.sh"
agent_init
start_daemon

SUBMIT='echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT'
VICTIM=$T/victim
VDIR=$T/victimdir
mkdir -p "$VDIR"

# victim_reset: the victim's content and an old mtime, remembered.
victim_reset() {
    printf 'victim %s\n' "$RUN_TAG" >"$VICTIM"
    touch -d '2001-02-03 04:05:06' "$VICTIM"
    VSTAT=$(stat -c '%s %Y' "$VICTIM")
}
# victim_same NAME: the victim is unchanged, and nothing appeared in $VDIR.
victim_same() {
    if [[ $(cat "$VICTIM") == "victim $RUN_TAG" && $(stat -c '%s %Y' "$VICTIM") == "$VSTAT" ]] &&
        [[ -z $(ls -A "$VDIR") ]]; then
        pass "$1"
    else
        fail "$1" "victim: $(stat -c '%s %Y' "$VICTIM") (was $VSTAT): $(head -c 300 "$VICTIM")" \
            "victim dir: $(ls -A "$VDIR")"
    fi
}
# outputs CMD...: model.outputs, one text-mode reply per command, then the submission.
outputs() {
    local a=() c
    for c in "$@" "$SUBMIT"; do a+=("$(block "$c")"); done
    json_strs "${a[@]}"
}
# minirun ARGS...: mini in the workspace $WS (its cwd), under the strict sandbox.
minirun() {
    MRUN_CWD=$WS mrun -y --exit-immediately -c mini_textbased --model-class deterministic -l 0 \
        --sandbox strict --workspace "$WS" -c "environment.socket=$SOCK" -t task "$@"
}
# refused NAME WORDS: the last run failed, its stderr saying WORDS.
refused() {
    if [[ $RC != 0 && $ERR == *"$2"* ]]; then pass "$1"; else fail "$1" "expected a failure saying: $2"; fi
}

# ==== 1. the audit log =======================================================
log "# -- policy.audit_log: audit.jsonl in the workspace"
victim_reset
minirun -o "$T/a1.traj.json" -c policy.audit_log=audit.jsonl \
    -c "model.outputs=$(outputs "ln -sfn $VICTIM audit.jsonl")"
if [[ $RC == 0 && -L $WS/audit.jsonl ]]; then pass "the sandboxed command replaced audit.jsonl with a symlink"
else fail "the sandboxed command replaced audit.jsonl with a symlink"; fi
minirun -o "$T/a2.traj.json" -c policy.audit_log=audit.jsonl -c "model.outputs=$(outputs "echo hi")"
refused "the next run refuses the audit log that is a symlink" "audit.jsonl: is a symbolic link"
victim_same "the victim behind the planted symlink is unchanged"

rm -f "$WS/audit.jsonl"
ln "$VICTIM" "$WS/audit.jsonl" # as a sandboxed command can, for a file of ours it sees
minirun -o "$T/a3.traj.json" -c policy.audit_log=audit.jsonl -c "model.outputs=$(outputs "echo hi")"
refused "an audit log with another hard link is refused" "audit.jsonl: has other hard links"
victim_same "the victim behind the planted hard link is unchanged"

rm -f "$WS/audit.jsonl"
mkfifo "$WS/audit.jsonl"
MRUN_TIMEOUT=20 minirun -o "$T/a4.traj.json" -c policy.audit_log=audit.jsonl -c "model.outputs=$(outputs "echo hi")"
refused "an audit log that is a FIFO is refused at once (no wait for a reader)" "audit.jsonl: not a regular file"
rm -f "$WS/audit.jsonl"

if is_root; then
    : >"$WS/audit.jsonl"
    chown 65534:65534 "$WS/audit.jsonl" # the sandbox's own file, as it makes them
    minirun -o "$T/a5.traj.json" -c policy.audit_log=audit.jsonl -c "model.outputs=$(outputs "echo hi")"
    refused "an audit log of another user is refused" "owned by uid 65534"
    check "nothing was written to the other user's file" test ! -s "$WS/audit.jsonl"
    rm -f "$WS/audit.jsonl"
fi

minirun -o "$T/a6.traj.json" -c policy.audit_log=audit.jsonl -c "model.outputs=$(outputs "echo hi")"
if [[ $RC == 0 && -f $WS/audit.jsonl && ! -L $WS/audit.jsonl ]] && [[ $(grep -c . "$WS/audit.jsonl") == 2 ]]; then
    pass "with nothing planted the audit log is created and written"
else fail "with nothing planted the audit log is created and written" "$(cat "$WS/audit.jsonl" 2>&1)"; fi
rm -f "$WS/audit.jsonl"

# ==== 2. mini-sandbox run's and the daemon's audit logs ======================
log "# -- mini-sandbox run --policy, mini-sandboxd --audit-log"
victim_reset
ln -sfn "$VICTIM" "$WS/cli-audit.jsonl"
printf '{"policy": {"default": "allow", "audit_log": "%s"}}\n' "$WS/cli-audit.jsonl" >"$T/cli-policy.json"
run sbx --policy "$T/cli-policy.json" -- echo hi
refused "mini-sandbox run refuses a policy audit_log that is a symlink" "is a symbolic link"
victim_same "the victim behind mini-sandbox run's audit log is unchanged"
rm -f "$WS/cli-audit.jsonl"

ln -sfn "$VICTIM" "$WS/daemon-audit.jsonl"
mkdir -m 0700 "$T/state2"
run bounded "$MINI_BIN/mini-sandboxd" --socket "$(dirname "$SOCK")/sock2" --state-dir "$T/state2" --foreground \
    --audit-log "$WS/daemon-audit.jsonl"
refused "mini-sandboxd refuses an --audit-log that is a symlink" "is a symbolic link"
victim_same "the victim behind the daemon's audit log is unchanged"
rm -f "$WS/daemon-audit.jsonl"

# ==== 3. mini inspect --html =================================================
log "# -- mini inspect --html"
victim_reset
mkdir -p "$T/insp"
cp "$T/a1.traj.json" "$T/insp/one.traj.json"
ln -sfn "$VICTIM" "$WS/report.html.tmp"
run bounded "$MINI_BIN/mini" inspect --html "$WS/report.html" "$T/insp"
if [[ $RC == 0 && -f $WS/report.html && ! -L $WS/report.html ]] && grep -q '<html' "$WS/report.html"; then
    pass "mini inspect writes the report past a planted OUT.html.tmp"
else fail "mini inspect writes the report past a planted OUT.html.tmp"; fi
victim_same "the victim behind OUT.html.tmp is unchanged"
check "no OUT.html.tmp is left" test ! -e "$WS/report.html.tmp" -a ! -L "$WS/report.html.tmp"

# ==== 4. the trajectory =====================================================
log "# -- the trajectory in the workspace"
victim_reset
mkws "$WS/out"
ln -sfn "$VICTIM" "$WS/out/traj.json.tmp"
minirun -o "$WS/out/traj.json" -c "model.outputs=$(outputs "echo one" "echo two")"
if [[ $RC == 0 && -f $WS/out/traj.json && ! -L $WS/out/traj.json ]]; then pass "a planted traj.json.tmp: the run saves"
else fail "a planted traj.json.tmp: the run saves"; fi
victim_same "the victim behind traj.json.tmp is unchanged"

rm -f "$WS/out/traj.json" "$WS/out/traj.json.tmp"
ln -sfn "$VICTIM" "$WS/out/traj.json"
minirun -o "$WS/out/traj.json" -c "model.outputs=$(outputs "echo one")"
if [[ $RC == 0 && -f $WS/out/traj.json && ! -L $WS/out/traj.json ]]; then pass "a planted traj.json: replaced by the trajectory"
else fail "a planted traj.json: replaced by the trajectory"; fi
victim_same "the victim behind traj.json is unchanged"

# The sandboxed command moves out/ away and puts a symlink to a directory
# outside the workspace in its place: the next saves of this run go on
# into the directory it started with (now out.real).
rm -rf "${WS:?}/out" "$WS/out.real"
mkws "$WS/out"
minirun -o "$WS/out/traj.json" -c "model.outputs=$(outputs "mv out out.real && ln -s $VDIR out" "echo after-swap")"
if [[ $RC == 0 && -f $WS/out.real/traj.json ]] && grep -q after-swap "$WS/out.real/traj.json"; then
    pass "out/ swapped for a symlink mid-run: the saves stay in the directory the run started with"
else fail "out/ swapped for a symlink mid-run: the saves stay in the directory the run started with" \
    "$(ls -la "$WS" "$WS/out.real" 2>&1)"; fi
victim_same "nothing was written into the directory the symlink points to"
rm -rf "$VDIR"/* "${WS:?}/out" "$WS/out.real"

# An earlier run's command planted out -> a directory outside the
# workspace; the next run names out/traj.json (and an audit log in it):
# neither is written there, and the run says which link it refused.
minirun -o "$T/p1.traj.json" -c "model.outputs=$(outputs "ln -sfn $VDIR out")"
if [[ $RC == 0 && -L $WS/out ]]; then pass "the sandboxed command planted out -> a directory outside"
else fail "the sandboxed command planted out -> a directory outside"; fi
minirun -o "$WS/out/traj.json" -c "model.outputs=$(outputs "echo hi")"
refused "a trajectory below a planted directory link is refused" "out is a symbolic link in the workspace"
victim_same "nothing was written through the planted directory link (trajectory)"
minirun -o "$T/p2.traj.json" -c policy.audit_log=out/audit.jsonl -c "model.outputs=$(outputs "echo hi")"
refused "an audit log below a planted directory link is refused" "out is a symbolic link in the workspace"
victim_same "nothing was written through the planted directory link (audit log)"
minirun -o "$WS/./sub/../out/traj.json" -c "model.outputs=$(outputs "echo hi")"
refused "the same link reached through sub/.. is refused too" "symbolic link in the workspace"
victim_same "nothing was written through the planted directory link (sub/..)"
rm -f "$WS/out"
# Control: the user's own link outside the workspace is followed.
mkdir -p "$T/mine"
ln -sfn "$T/mine" "$T/mylink"
minirun -o "$T/mylink/traj.json" -c "model.outputs=$(outputs "echo hi")"
if [[ $RC == 0 && -f $T/mine/traj.json ]]; then pass "control: a link of the user's outside the workspace is followed"
else fail "control: a link of the user's outside the workspace is followed" "status $RC: $ERR"; fi

# ==== 5. mini batch's output folder =========================================
log "# -- mini batch output folder"
victim_reset
printf '{"instance_id": "t1", "problem_statement": "x"}\n' >"$T/tasks.jsonl"
cat >"$T/bcfg.yaml" <<EOF
model:
  model_class: deterministic
  outputs: $(outputs)
EOF
mkdir -p "$WS/bout"
ln -sfn "$VDIR/created" "$WS/bout/.mini-batch.lock"
batch() {
    MRUN_CWD=$WS mrun batch "$T/tasks.jsonl" -o "$WS/bout" -c mini -c "$T/bcfg.yaml" \
        -c "environment.socket=$SOCK" --sandbox strict
}
batch
refused "mini batch refuses a lock file planted as a symlink" ".mini-batch.lock"
victim_same "nothing was created where the planted lock link points"
rm -f "$WS/bout/.mini-batch.lock" "$VDIR/created"
victim_reset
printf '{"secret-%s": "victim"}' "$RUN_TAG" >"$VICTIM.json"
ln -sfn "$VICTIM" "$WS/bout/summary.json"
ln -sfn "$VICTIM.json" "$WS/bout/preds.json"
touch -d '2001-02-03 04:05:06' "$VICTIM.json"
batch
if [[ $RC == 0 && -f $WS/bout/preds.json && ! -L $WS/bout/preds.json && ! -L $WS/bout/summary.json ]]; then
    pass "mini batch replaces planted summary.json and preds.json links with its files"
else fail "mini batch replaces planted summary.json and preds.json links with its files"; fi
victim_same "the victim behind summary.json is unchanged"
check "the JSON victim behind preds.json is unchanged" \
    test "$(cat "$VICTIM.json")" = "{\"secret-$RUN_TAG\": \"victim\"}" -a "$(stat -c %Y "$VICTIM.json")" = "$(date -d '2001-02-03 04:05:06' +%s)"
if grep -rqs "secret-$RUN_TAG" "$WS/bout" --exclude='*.damaged'; then
    fail "the JSON victim behind preds.json is not read into the output" "$(grep -rl "secret-$RUN_TAG" "$WS/bout")"
else pass "the JSON victim behind preds.json is not read into the output"; fi

finish

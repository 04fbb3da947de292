#!/bin/bash
# `mini batch` copies a task's `workspace` directory into OUT/ID/workspace.
# Task files come from elsewhere, so the copy is an attack surface:
#  1. as root, a source holding a root-owned 0600 secret: the copy runs
#     with the rights of the workspace's owner (nobody), so it fails with a
#     clear reason and the secret is nowhere in the output (not in the
#     copy, not in the trajectory of a model that runs `cat secret`);
#  2. system directories are refused ("/etc", "/", "/root", /proc/...),
#     also through a symlink to /etc, and /etc/shadow appears nowhere;
#  3. the home directory and a directory holding mini's configuration
#     directory are refused, as the sandbox daemon refuses them;
#  4. a normal workspace is still copied and the task runs: modes and
#     timestamps kept, symlinks copied as symlinks, every file of the copy
#     owned by the workspace's owner (as root), no setuid or setgid bit.
# Each refusal fails its own task only: the batch goes on.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
have python3 || skip_all "python3 is missing"

MINI=$MINI_BIN/mini
start_daemon
B=$T/b
mkdir -p "$B"
chmod 0755 "$B"
cd "$B" || exit 1
SECRET=batch-copy-secret-$RUN_TAG

cat >"$B/cfg.yaml" <<'EOF'
agent:
  wall_time_limit_seconds: 20
model:
  model_class: deterministic
  outputs:
    - "Look.\n```mswea_bash_command\nls -la; cat secret; cat shadow; cat etc/shadow; head -c 300 passwd\n```"
    - "Submit.\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; ls\n```"
EOF

# The sources.  secret: a public file and the secret (root's 0600 as root).
mkdir -p "$B/secret"
echo public >"$B/secret/public.txt"
printf '%s\n' "$SECRET" >"$B/secret/secret"
chmod 0600 "$B/secret/secret"
# normal: modes, an old timestamp, a subdirectory, a symlink (copied as
# one), a setuid and a setgid program (copied without the bits).
mkdir -p "$B/normal/sub"
echo hello >"$B/normal/a.txt"
chmod 0640 "$B/normal/a.txt"
printf '#!/bin/sh\necho run\n' >"$B/normal/tool"
chmod 4755 "$B/normal/tool"
cp "$B/normal/tool" "$B/normal/gtool"
chmod 2755 "$B/normal/gtool"
echo deep >"$B/normal/sub/deep.txt"
chmod 0750 "$B/normal/sub"
ln -s /etc/shadow "$B/normal/shadow"
touch -h -d '2001-02-03 04:05:06' "$B/normal/a.txt" "$B/normal/shadow"
touch -d '2002-03-04 05:06:07' "$B/normal/sub"
if is_root; then
    chmod a+r "$B/normal/a.txt" # nobody must be able to read what it copies
    chmod a+rx "$B/normal/sub"
    chmod 0640 "$B/normal/a.txt" && chown 0:65534 "$B/normal/a.txt"
fi
ln -s /etc "$B/etclink"
# A home directory and a directory holding mini's configuration directory.
mkdir -p "$B/home/.config/mini-swe-agent" "$B/holder/cfg/mini-swe-agent"
chmod -R a+rX "$B/home" "$B/holder"

python3 - "$B" >"$B/tasks.jsonl" <<'EOF'
import json, sys
b = sys.argv[1]
tasks = {
    "secret": b + "/secret",
    "etc": "/etc",
    "etc-slash": "/etc/",
    "etclink": b + "/etclink",
    "etclink-shadow": b + "/etclink/ssh",
    "root": "/",
    "roothome": "/root",
    "proc": "/proc/self/root/etc",
    "home": b + "/home",
    "holder": b + "/holder",
    "normal": b + "/normal",
}
for i, w in tasks.items():
    print(json.dumps({"instance_id": i, "problem_statement": "look", "workspace": w}))
EOF

OUTD=$B/out
run bounded env NO_COLOR=1 HOME="$B/home" MSWEA_GLOBAL_CONFIG_DIR="$B/holder/cfg/mini-swe-agent" \
    "$MINI" batch "$B/tasks.jsonl" -o "$OUTD" -w 2 -c mini -c "$B/cfg.yaml" -c "environment.socket=$SOCK" \
    --sandbox strict
if [[ $RC == 0 ]]; then pass "the batch goes on past refused tasks: exit 0"
else fail "the batch goes on past refused tasks: exit 0" "$ERR"; fi

# field ID KEY: result.json's KEY of task ID.
field() {
    python3 -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print("" if v is None else v)' \
        "$OUTD/$1/result.json" "$2" 2>/dev/null || true
}
# refused ID WANT: the task ended WorkspaceError, its error saying WANT.
refused() {
    local st err
    st=$(field "$1" exit_status)
    err=$(field "$1" error)
    if [[ $st == WorkspaceError ]] && contains "$err" "$2"; then pass "$1: refused ($err)"
    else fail "$1: refused, saying \"$2\"" "exit_status: $st" "error: $err"; fi
    if [[ ! -e $OUTD/$1/$1.traj.json ]]; then pass "$1: the agent never ran"
    else fail "$1: the agent never ran" "$(head -c 2000 "$OUTD/$1/$1.traj.json")"; fi
}

refused etc "a system directory"
refused etc-slash "a system directory"
refused etclink "symbolic link"
refused etclink-shadow "symbolic link"
refused root "a system directory"
refused roothome "not allowed"
refused proc "a system directory"
refused home "a home directory"
refused holder "mini's configuration directory"

# Nothing of /etc in the output: no copied file, no shadow line.
if [[ -z $(find "$OUTD" -name shadow -path '*/workspace/*' ! -type l 2>/dev/null) ]] &&
    [[ ! -e $OUTD/etc/workspace/passwd && ! -e $OUTD/etclink/workspace/passwd ]]; then
    pass "no file of /etc was copied"
else fail "no file of /etc was copied" "$(find "$OUTD" -path '*/workspace/*' | head)"; fi
if is_root; then
    line=$(grep -m1 '^root:' /etc/shadow || true)
    if [[ -n $line ]] && ! grep -rqF -- "$line" "$OUTD"; then pass "/etc/shadow's root line appears nowhere in the output"
    else fail "/etc/shadow's root line appears nowhere in the output" "$(grep -rlF -- "$line" "$OUTD" | head)"; fi
fi

# 1. The secret: as root, root's 0600 file is one the owner (nobody)
# cannot read, so the copy fails, saying why.  (Rootless, it is the
# user's own file, copied as any other.)
if is_root; then
    if grep -rqF -- "$SECRET" "$OUTD"; then
        fail "as root: the secret appears nowhere in the output (copy, trajectory, logs)" \
            "$(grep -rlF -- "$SECRET" "$OUTD")"
    else pass "as root: the secret appears nowhere in the output (copy, trajectory, logs)"; fi
    st=$(field secret exit_status)
    err=$(field secret error)
    if [[ $st == WorkspaceError ]] && contains "$err" "Permission denied" && contains "$err" "65534"; then
        pass "as root: a file the owner cannot read fails the copy ($err)"
    else fail "as root: a file the owner cannot read fails the copy" "exit_status: $st" "error: $err"; fi
    check "as root: the secret is not in the copy" test ! -e "$OUTD/secret/workspace/secret"
else
    check "rootless: the user's own workspace is copied" test -f "$OUTD/secret/workspace/secret"
fi

# 4. The normal workspace.
W=$OUTD/normal/workspace
st=$(field normal exit_status)
if [[ $st == Submitted ]]; then pass "normal: copied, the task ran ($st)"
else fail "normal: copied, the task ran" "exit_status: $st" "error: $(field normal error)"; fi
if grep -qF '"a.txt' "$OUTD/normal/normal.traj.json" 2>/dev/null || grep -q 'a\.txt' "$OUTD/normal/normal.traj.json" 2>/dev/null; then
    pass "normal: the agent saw the copied files"
else fail "normal: the agent saw the copied files" "$(head -c 1500 "$OUTD/normal/normal.traj.json" 2>&1)"; fi
same_stat() {
    local want got
    want=$(stat -c "$2" "$B/normal/$1")
    got=$(stat -c "$2" "$W/$1" 2>&1)
    if [[ $want == "$got" ]]; then pass "normal: $1 keeps $3 ($got)"
    else fail "normal: $1 keeps $3" "source: $want" "copy: $got"; fi
}
same_stat a.txt %a "its mode"
same_stat a.txt %Y "its mtime"
same_stat sub %a "its mode"
same_stat sub %Y "its mtime"
same_stat sub/deep.txt %s "its content"
check "normal: a symlink is copied as a symlink, to the same target" \
    test "$(readlink "$W/shadow" 2>&1)" = /etc/shadow
same_stat shadow %Y "its own mtime"
bits=$(find "$W" -perm /6000 2>&1)
if [[ -z $bits && -f $W/tool && -f $W/gtool ]]; then pass "normal: no setuid or setgid bit survives the copy"
else fail "normal: no setuid or setgid bit survives the copy" "$bits" "$(ls -la "$W" 2>&1)"; fi
if is_root; then
    owners=$(find "$W" -printf '%U:%G %p\n' | grep -v '^65534:65534 ' || true)
    if [[ -z $owners ]]; then pass "as root: every file of the copy belongs to the workspace's owner 65534:65534"
    else fail "as root: every file of the copy belongs to the workspace's owner 65534:65534" "$owners"; fi
    owners=$(find "$OUTD" \( -path '*/workspace' -o -path '*/workspace/*' \) ! -user 65534 -printf '%U %p\n')
    if [[ -z $owners ]]; then pass "as root: nothing in any task's workspace belongs to another user than 65534"
    else fail "as root: nothing in any task's workspace belongs to another user than 65534" "$owners"; fi
fi

finish

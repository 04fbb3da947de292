#!/bin/bash
# The template of the root (container/rootfs.c, mini_rootfs_template;
# sandbox/daemon/roott.c, roott_get): from its third sandbox on, a
# session's sandboxes clone a tree built once (binds, /dev, hidden paths)
# instead of building it.  Every clone shares the template's superblocks,
# so these checks attack that sharing, from inside and on the host:
#
#  1. the template is made (daemon log) and used: the root, /dev and a
#     hidden directory are read-only superblocks in the sandbox
#  2. nothing a command tries to write there lands: not in /, /dev, a
#     hidden directory, a bound host directory; the next sandbox of the
#     session sees none of it, and its /tmp, /dev/shm and processes are
#     its own
#  3. / and /dev belong to the sandbox's root, and so do what the
#     command makes in the workspace (host side: the workspace's owner)
#  4. a hidden file replaced on the host (rename, as passwd does) after the
#     template was made stays hidden: the template is made again
#  5. a hidden directory that appears on the host after the template was
#     made is hidden in the next command
#  6. an optional bind that appears later is there in the next command
#  6b. root: a mount made on the host under a bound directory after the
#     template was made shows in the next command, and once unmounted is
#     gone from the one after (the template and the pool are made again)
#  6c. root: the same for a mount under the workspace (each sandbox
#     clones the workspace's mount tree when it is prepared)
#  6d. root: a mount made and removed elsewhere is hashed ahead of the
#     next command, which then reads no mount table
#  7. no fd of the template reaches the command
#  8. closing the session leaves no builder, no sandbox, no new mount on
#     the host, the daemon's fds as they were, and nothing written into
#     the bound host directory
#  9. a template that cannot be made (the workspace lies in a hidden
#     directory, whose cover is read-only in a template) is given up for
#     the session, which goes on with sandboxes that build their root
# 10. root: two sessions side by side for workspaces of two other users
#     each get a template of their own: inside, / is each sandbox's root;
#     on the host, each command's file is its own workspace owner's
#
# Registered as root and rootless.  Prints "N passed, N failed".
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
MINI_TEST_LOG_LEVEL=debug
mini_test_init "$@"
skip_if_caches_off "it checks the template of the root"

TAG=$RUN_TAG
start_daemon

# A bound host directory with secrets in it, outside /tmp (which strict
# covers with a tmpfs of its own).
PUB=$(mktemp -d /var/tmp/mini-template.XXXXXX)
cleanup_path "$PUB"
chmod 755 "$PUB"
echo "visible" >"$PUB/canary"
echo "OLD-$TAG" >"$PUB/secret.txt"
mkdir "$PUB/secretdir"
echo "DIR-$TAG" >"$PUB/secretdir/key"
chmod -R a+rX "$PUB"
LATER=$PUB-later # an optional bind, absent at first
cleanup_path "$LATER"
# 6b's mount point (root only); cleanup runs in reverse order, so the
# unmount comes before $PUB is removed.
mkdir "$PUB/mnt"
chmod 755 "$PUB/mnt"
cleanup_cmd "umount $PUB/mnt 2>/dev/null"
PROF=$T/strict-template.json
python3 - "$MINI_SOURCE_DIR/profiles/strict.json" "$PROF" "$PUB" "$LATER" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
fs = p["filesystem"]
fs["binds"] += [sys.argv[3], {"path": sys.argv[4], "optional": True}]
fs["hide"] += [sys.argv[3] + "/secret.txt", sys.argv[3] + "/secretdir", sys.argv[3] + "/later-secrets"]
json.dump(p, open(sys.argv[2], "w"))
PY

listing() { (cd "$PUB" && find . -printf '%p %u %m\n' | sort); }
mounts_before=$(wc -l </proc/self/mountinfo)
pub_before=$(listing)

OUT_FILE=$T/template.out
RC=0
timeout 120 python3 - "$MINI_SOURCE_DIR/tests/integration" "$SOCK" "$WS" "$PROF" "$PUB" "$LATER" "$TAG" \
    "$DAEMON_LOG" "$DAEMON_PID" >"$OUT_FILE" 2>&1 <<'PY' || RC=$?
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import pool_client
sock, ws, prof, pub, later, tag, log, daemon = sys.argv[2:10]

def check(name, ok, detail=""):
    print(("ok " if ok else "not ok ") + name + ("" if ok else ": " + detail), flush=True)

def made():
    return open(log).read().count("root's template made")

def nfds():
    return len(os.listdir(f"/proc/{daemon}/fd"))

c = pool_client.connect(sock)
# A first session, opened and closed, so that the fds a daemon keeps once
# it has served one (state directory, cgroups) are open before counting.
s = c.reply(c.request("open", workspace=ws, profile_data=json.load(open(prof))))["session"]
c.wait_exit(c.exec(s, "true"), timeout=30)
c.reply(c.request("close", session=s))
time.sleep(0.5)
fds_before = nfds()
s = c.reply(c.request("open", workspace=ws, profile_data=json.load(open(prof))))["session"]

def run(cmd):
    r = c.wait_exit(c.exec(s, cmd), timeout=30)
    return r["output"]

# Enough commands for the template to be made and used.
for i in range(4):
    run("true")
check("[1] the daemon made the session's template", made() == 1, f"{made()} made")
mi = run("cat /proc/self/mountinfo")
def super_ro(mp):
    for line in mi.splitlines():
        f = line.split()
        if f[4] == mp:
            opts = line.split(" - ")[1].split()
            return opts[2].split(",")[0] == "ro"
    return None
for mp in ("/", "/dev", pub + "/secretdir"):
    check(f"[1] {mp} is a read-only superblock (a clone of the template)", super_ro(mp) is True,
          f"mountinfo: {[l for l in mi.splitlines() if l.split()[4] == mp]}")

# 2. writes into what the sandboxes share
attempts = (f"touch /x-{tag}; mkdir /d-{tag}; touch /dev/x-{tag}; mknod /dev/n-{tag} c 1 3; "
            f"touch {pub}/secretdir/x-{tag}; touch {pub}/w-{tag}; ln -s / /dev/l-{tag}; "
            f"mount -o remount,rw / ; mount -t tmpfs none /mnt; "
            f"echo {tag} > /tmp/t-{tag}; echo {tag} > /dev/shm/s-{tag}; (setsid sleep 60 >/dev/null 2>&1 &); "
            f"echo done")
out = run(attempts)
check("[2] the attempts ran", out.rstrip().endswith("done"), out)
after = run(f"ls -d /x-{tag} /d-{tag} /dev/x-{tag} /dev/n-{tag} {pub}/secretdir/x-{tag} {pub}/w-{tag} "
            f"/dev/l-{tag} /tmp/t-{tag} /dev/shm/s-{tag} 2>/dev/null; ps -eo args | grep -c '^sleep 60'; echo end")
check("[2] the next sandbox sees nothing of them, and not the sleep", after == "0\nend\n", after)
host = [p for p in (f"{pub}/w-{tag}", f"{pub}/secretdir/x-{tag}") if os.path.lexists(p)]
check("[2] nothing landed in the bound host directory", not host, str(host))

# 3. ownership inside
own = run("stat -c '%u %g' / /dev /proc/self/root/dev/null >/dev/null; stat -c '%u:%g' / /dev; id -u; "
          f"touch ws-{tag}; stat -c '%u' ws-{tag}")
check("[3] / and /dev are the sandbox root's, and so is its new file", own == "0:0\n0:0\n0\n0\n", own)
st = os.stat(os.path.join(ws, f"ws-{tag}"))
wst = os.stat(ws)
check("[3] on the host the file is the workspace owner's", (st.st_uid, st.st_gid) == (wst.st_uid, wst.st_gid),
      f"file {st.st_uid}:{st.st_gid}, workspace {wst.st_uid}:{wst.st_gid}")

# 4. a hidden file replaced on the host by rename
read_secret = f"cat {pub}/secret.txt 2>/dev/null; cat {pub}/secretdir/key 2>/dev/null; cat {pub}/canary"
check("[4] before: the secrets are hidden, the canary is not", run(read_secret) == "visible\n", run(read_secret))
n = made()
with open(f"{pub}/secret.new", "w") as f:
    f.write(f"NEW-{tag}\n")
os.chmod(f"{pub}/secret.new", 0o644)
os.rename(f"{pub}/secret.new", f"{pub}/secret.txt")
out = run(read_secret)
check("[4] the replaced hidden file stays hidden", out == "visible\n", out)
out = run(read_secret)
check("[4] ... in the command after it too", out == "visible\n", out)
check("[4] the template was made again", made() > n, f"made {n} -> {made()}")

# 5. a hidden directory that appears after the template was made
os.mkdir(f"{pub}/later-secrets")
with open(f"{pub}/later-secrets/.env", "w") as f:
    f.write(f"LATER-{tag}\n")
os.chmod(f"{pub}/later-secrets", 0o755)
os.chmod(f"{pub}/later-secrets/.env", 0o644)
for i in range(2):
    out = run(f"cat {pub}/later-secrets/.env 2>/dev/null || echo hidden")
    check(f"[5] a hidden directory made since is hidden (command {i + 1})", out == "hidden\n", out)

# 6. an optional bind that appears later
os.mkdir(later)
with open(f"{later}/here", "w") as f:
    f.write("here\n")
os.chmod(later, 0o755)
os.chmod(f"{later}/here", 0o644)
for i in range(2):
    out = run(f"cat {later}/here 2>&1")
    check(f"[6] an optional bind made since is there (command {i + 1})", out == "here\n", out)

# 6b. a mount under a bind, made and removed on the host after the template
if os.geteuid() == 0:
    import subprocess
    n = made()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=755", f"mini-6b-{tag}", f"{pub}/mnt"], check=True)
    with open(f"{pub}/mnt/marker", "w") as f:
        f.write(f"MOUNTED-{tag}\n")
    os.chmod(f"{pub}/mnt/marker", 0o644)
    for i in range(2):
        out = run(f"cat {pub}/mnt/marker 2>&1 || true")
        check(f"[6b] a mount made under a bind since shows (command {i + 1})", out == f"MOUNTED-{tag}\n", out)
    check("[6b] the template was made again for it", made() > n, f"made {n} -> {made()}")
    subprocess.run(["umount", f"{pub}/mnt"], check=True)
    for i in range(2):
        out = run(f"cat {pub}/mnt/marker 2>/dev/null || echo gone")
        check(f"[6b] once unmounted on the host it is gone (command {i + 1})", out == "gone\n", out)
    # 6c. the same under the workspace: each sandbox clones the
    # workspace's mount tree when it is prepared, so the pool's copy
    # would keep a mount the host has since removed
    wsm = f"{ws}/mnt-6c-{tag}"
    os.mkdir(wsm)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=755", f"mini-6c-{tag}", wsm], check=True)
    try:
        with open(f"{wsm}/marker", "w") as f:
            f.write(f"WS-MOUNTED-{tag}\n")
        os.chmod(f"{wsm}/marker", 0o644)
        for i in range(2):
            out = run(f"cat {wsm}/marker 2>&1 || true")
            check(f"[6c] a mount made under the workspace since shows (command {i + 1})",
                  out == f"WS-MOUNTED-{tag}\n", out)
    finally:
        subprocess.run(["umount", wsm], check=True)
    for i in range(2):
        out = run(f"cat {wsm}/marker 2>/dev/null || echo gone")
        check(f"[6c] once unmounted on the host it is gone (command {i + 1})", out == "gone\n", out)
    os.rmdir(wsm)
    # 6d. a change elsewhere is hashed ahead, off the next command's path:
    # that command does not read the table (other tests may change it
    # meanwhile: three tries)
    import tempfile
    far = tempfile.mkdtemp(prefix="mini-6d.", dir="/var/tmp")
    ahead = lambda: open(log).read().count("hashed for")
    took = lambda: open(log).read().count("read for this command")
    ok = False
    for _ in range(3):
        a, t = ahead(), took()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", f"mini-6d-{tag}", far], check=True)
        subprocess.run(["umount", far], check=True)
        time.sleep(0.5)
        run("true")
        if ahead() > a and took() == t:
            ok = True
            break
    os.rmdir(far)
    check("[6d] a mount change is hashed ahead of the next command, which reads no table", ok,
          f"hashed ahead {ahead()}, read for a command {took()}")
else:
    print("# [6b], [6c] need root to mount on the host: skipped here", flush=True)

# 7. no fd but stdio reaches the command
out = run("ls /proc/self/fd | sort -n | tr '\\n' ' '")
check("[7] the command has only its stdio (and ls's own directory fd)", out.split() == ["0", "1", "2", "3"], out)

c.reply(c.request("close", session=s))
deadline = time.time() + 10
while nfds() > fds_before and time.time() < deadline:
    time.sleep(0.1)
check("[8] the daemon's fds are back to what they were (the template closed)", nfds() <= fds_before,
      f"{fds_before} before, {nfds()} after: {sorted(os.readlink(f'/proc/{daemon}/fd/' + f) for f in os.listdir(f'/proc/{daemon}/fd'))}")
PY
while IFS= read -r line; do
    case $line in
    "ok "*) pass "${line#ok }" ;;
    "not ok "*)
        line=${line#not ok }
        fail "${line%%: *}" "${line#*: }"
        ;;
    esac
done <"$OUT_FILE"
RC_PY=$RC
RC=0 OUT=$(cat "$OUT_FILE") ERR=
if [[ $RC_PY == 0 ]]; then
    pass "the session's checks ran to the end"
else
    fail "the session's checks ran to the end" "python exit $RC_PY: $(tail -5 "$OUT_FILE")"
fi

# 8. what closing the session leaves
builders() {
    local p
    for p in $(pgrep -P "$DAEMON_PID"); do
        [[ $(readlink "/proc/$p/exe" 2>/dev/null) == *mini-sandboxd* ]] && echo "$p"
    done
    return 0
}
no_builder() { [[ -z $(builders) ]]; }
check "[8] no builder or setup child of the daemon is left" wait_until 10 no_builder
check "[8] no sandbox of ours is left" wait_until 10 no_sandbox_of_ours
mounts_after=$(wc -l </proc/self/mountinfo)
RC=0 OUT=$mounts_after ERR=
if [[ $mounts_after == "$mounts_before" ]]; then
    pass "[8] no new mount on the host"
else
    fail "[8] no new mount on the host" "$mounts_before lines before, $mounts_after after"
fi
# 9. a template that cannot be made
mkdir -m 755 "$PUB/wsparent"
mkws "$PUB/wsparent/ws"
PROF9=$T/strict-wsparent.json
python3 - "$PROF" "$PROF9" "$PUB" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["filesystem"]["hide"].append(sys.argv[3] + "/wsparent")
json.dump(p, open(sys.argv[2], "w"))
PY
RC=0
OUT=$(timeout 60 python3 - "$MINI_SOURCE_DIR/tests/integration" "$SOCK" "$PUB/wsparent/ws" "$PROF9" "$TAG" 2>&1 <<'PY'
import json, sys
sys.path.insert(0, sys.argv[1])
import pool_client
sock, ws, prof, tag = sys.argv[2:6]
c = pool_client.connect(sock)
s = c.reply(c.request("open", workspace=ws, profile_data=json.load(open(prof))))["session"]
for i in range(5):
    r = c.wait_exit(c.exec(s, f"echo {tag}-{i} > f{i} && cat f{i} && ls /tmp | wc -l"), timeout=30)
    print(r["returncode"], r["output"].replace("\n", " ").strip())
c.reply(c.request("close", session=s))
PY
) || RC=$?
want=$(for i in 0 1 2 3 4; do echo "0 $TAG-$i 0"; done)
if [[ $RC == 0 && $OUT == "$want" ]]; then
    pass "[9] every command of that session ran, in its workspace"
else
    fail "[9] every command of that session ran, in its workspace" "want: $want"
fi
check "[9] the daemon gave the template up for that session (log)" \
    grep -q "its sandboxes build their whole root" "$DAEMON_LOG"
check "[9] the files are in the workspace on the host" test -s "$PUB/wsparent/ws/f4"
rm -rf "$PUB/wsparent"

# 10. two owners' sessions at once (root daemon: each session its own uid)
if is_root; then
    WA=$PUB/owner-a WB=$PUB/owner-b
    mkdir -m 755 "$WA" "$WB"
    chown 65534:65534 "$WA"
    chown 65533:65533 "$WB"
    RC=0
    OUT=$(timeout 60 python3 - "$MINI_SOURCE_DIR/tests/integration" "$SOCK" "$WA" "$WB" "$PROF" "$TAG" 2>&1 <<'PY'
import json, sys
sys.path.insert(0, sys.argv[1])
import pool_client
sock, wa, wb, prof, tag = sys.argv[2:7]
c = pool_client.connect(sock)
ss = [c.reply(c.request("open", workspace=w, profile_data=json.load(open(prof))))["session"] for w in (wa, wb)]
out = []
for i in range(5):  # interleaved: both sessions' templates exist from the third on
    for k, s in enumerate(ss):
        r = c.wait_exit(c.exec(s, f"stat -c %u:%g / /dev | tr '\\n' ' '; touch f{k}-{i}"), timeout=30)
        out.append(r["output"].strip())
for s in ss:
    c.reply(c.request("close", session=s))
print(" | ".join(sorted(set(out))))
PY
) || RC=$?
    if [[ $RC == 0 && $OUT == "0:0 0:0" ]]; then
        pass "[10] / and /dev are each sandbox's root's in both sessions"
    else
        fail "[10] / and /dev are each sandbox's root's in both sessions" "want 0:0 0:0"
    fi
    # (the group is the owner's primary one, which an id without a
    # passwd entry does not have: only the uid is compared)
    owners=$(stat -c '%u' "$WA"/f0-* "$WB"/f1-* | sort | uniq -c | awk '{print $1 "x" $2}' | tr '\n' ' ')
    RC=0 OUT=$owners ERR=
    if [[ $owners == "5x65533 5x65534 " ]]; then
        pass "[10] on the host each session's files are its own workspace owner's"
    else
        fail "[10] on the host each session's files are its own workspace owner's" "owners: $owners"
    fi
    rm -rf "$WA" "$WB"
fi

rm -f "$PUB/secret.txt" "$PUB/later-secrets/.env" && rmdir "$PUB/later-secrets"
echo "OLD-$TAG" >"$PUB/secret.txt" && chmod 644 "$PUB/secret.txt"
pub_after=$(listing)
RC=0 OUT=$pub_after ERR=
if [[ $pub_after == "$pub_before" ]]; then
    pass "[8] nothing was made in the bound host directory"
else
    fail "[8] nothing was made in the bound host directory" "before: $pub_before; after: $pub_after"
fi

finish

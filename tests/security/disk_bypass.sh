#!/bin/bash
# Ways around limits.disk_mb (sandbox/daemon/disk.c, docs/isolation.md
# "Workspace disk use"), tried from inside the sandbox and at the daemon:
#
# a. a file written in the workspace, unlinked while held open: its blocks
#    are in no tree the daemon walks, yet they are the session's;
# b. the same with O_TMPFILE, which never has a name;
# c. the same, mapped and its fd closed (held by the mapping alone);
# d. the daemon at its open-files limit: an open with disk_mb must answer
#    busy or say the limit is enforced, never open with it off.
#
# After each, the host checks that nothing is left: the workspace holds
# what it held, no sandbox of this run lives on.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
have python3 || skip_all "python3 is missing"

expect_eq_val() { if [[ $2 == "$3" ]]; then pass "$1"; else fail "$1" "got: $2"; fi; }
collect() { # the python checks' "ok"/"NOT ok" lines, as checks
    local line
    while IFS= read -r line; do
        case $line in
        "ok "*) pass "${line#ok }" ;;
        "NOT ok "*) fail "${line#NOT ok }" ;;
        "# "*) log "$line" ;;
        esac
    done <<<"$OUT"
    if (( RC != 0 )); then fail "$1: the checks ran to the end" "$ERR"; fi
}

start_daemon
# Each command writes 200 MiB (real writes, so blocks are allocated; under
# strict's file_size_mb of 256) to a file it holds with no name, then sleeps: under disk_mb 20 it must be
# killed (137, limit disk) long before it is done.  The marker sleep lets
# the host see whether anything of it lives on.
MARK=$(uniq_sleep 7)
run bounded env PYTHONPATH="$MINI_SOURCE_DIR/tests/integration" python3 -B - "$SOCK" "$WS" "$MARK" <<'EOF'
import os, sys, time
from pool_client import connect
sock, ws, mark = sys.argv[1:4]
c = connect(sock)
def say(name, ok, detail=""):
    print(("ok " if ok else "NOT ok ") + name + ("" if ok else f"  [{detail}]"), flush=True)

def killed(name, s, cmd):
    t0 = time.monotonic()
    r = c.run(s, cmd, timeout=120)
    dt = time.monotonic() - t0
    print(f"# {name}: {dt:.2f} s, exit {r['returncode']}, limit {r['limit']}, notes {[n[:140] for n in r['notes'] if n.startswith('disk:')]}")
    say(f"{name}: killed with limit disk (137) before writing 200 MiB",
        r["returncode"] == 137 and r["limit"] == "disk" and "wrote" not in r["output"], r)

r = c.reply(c.request("open", workspace=ws, profile="strict", overrides={"limits": {"disk_mb": 20}}))
s = r["session"]
say("strict, disk_mb 20: enforced", r["isolation"]["workspace_quota"]["enforced"] is True, r["isolation"])

# a. unlinked while held open; the shell and head both hold it.
killed("a. unlinked, held open", s,
       f"exec 3>big && rm big && head -c 200M /dev/zero >&3 && echo wrote; sleep {mark}")
# b. O_TMPFILE (python3 inside; the workspace's filesystem supports it).
killed("b. O_TMPFILE", s, "python3 -c '\n"
       "import os, time\n"
       "fd = os.open(\".\", os.O_TMPFILE | os.O_WRONLY, 0o600)\n"
       "b = bytes(1 << 20)\n"
       "for i in range(200): os.write(fd, b)\n"
       "print(\"wrote\", flush=True)\n"
       f"time.sleep({mark})'")
# c. mapped, the fd closed: only the mapping holds it (libc's mmap through
# ctypes: Python's mmap module would keep an fd of its own).
killed("c. unlinked, held by a mapping only", s, "python3 -c '\n"
       "import ctypes, os, time\n"
       "libc = ctypes.CDLL(None, use_errno=True)\n"
       "libc.mmap.restype = ctypes.c_void_p\n"
       "libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]\n"
       "fd = os.open(\"m\", os.O_CREAT | os.O_RDWR, 0o600)\n"
       "os.unlink(\"m\")\n"
       "b = bytes(1 << 20)\n"
       "for i in range(200): os.write(fd, b)\n"
       "assert libc.mmap(None, 1 << 20, 3, 1, fd, 0) not in (None, ctypes.c_void_p(-1).value)\n"
       "os.close(fd)\n"
       "print(\"mapped\", flush=True)\n"
       f"time.sleep({mark})\n"
       "print(\"wrote\", flush=True)'")
r = c.run(s, "echo after", timeout=30)
say("after them, the session is under its limit again: a command runs",
    r["returncode"] == 0 and r["limit"] is None and not any(n.startswith("disk:") for n in r["notes"]), r)
c.close_session(s)

# The overlay root (standard): a file unlinked under /usr while held.
r = c.reply(c.request("open", workspace=ws, profile="standard", overrides={"limits": {"disk_mb": 20}}))
s = r["session"]
if r["isolation"].get("session_overlay"):
    killed("a. in the overlay (/usr), unlinked, held open", s,
           f"exec 3>/usr/big && rm /usr/big && head -c 200M /dev/zero >&3 && echo wrote; sleep {mark}")
else:
    print("# standard: no session overlay on this machine")
c.close_session(s)
c.close()
EOF
collect "held files"
wait_until 10 no_sandbox_of_ours || fail "no sandbox of this run is left" "$(our_sandbox_pids)"
if [[ -z $(pgrep -f "sleep $MARK") ]]; then pass "no process of the commands is left"; else fail "no process of the commands is left" "$(pgrep -af "sleep $MARK")"; fi
expect_eq_val "the workspace holds nothing" "$(find "$WS" -mindepth 1 | wc -l) $(du -sk "$WS" | cut -f1)" "0 4"
stop_daemon || true
mv "$DAEMON_LOG" "$T/daemon-held.log"

# d. At the open-files limit.  Each open takes several fds (the
# workspace, its disk watch's, the prepared sandbox's), each connection
# one: opening one more connection per attempt moves the point where the
# fds run out across every step of an open, the disk watch's included.
printf '#!/bin/bash\nulimit -n 64 && exec "$@"\n' >"$T/nofile64"
chmod +x "$T/nofile64"
# A workspace the daemon cannot measure on its loop (more than 256
# entries): the open's measure needs its process and pipe.
for i in $(seq 1 300); do : >"$WS/f$i"; done
is_root && chown -R 65534:65534 "$WS"
DAEMON_WRAPPER=$T/nofile64 start_daemon --max-clients 1000
run bounded env PYTHONPATH="$MINI_SOURCE_DIR/tests" python3 -B - "$SOCK" "$WS" <<'EOF'
import socket, sys
from rawframe import call, frame, recv_frame
sock, ws = sys.argv[1:3]
def say(name, ok, detail=""):
    print(("ok " if ok else "NOT ok ") + name + ("" if ok else f"  [{detail}]"), flush=True)
held, counts, off = [], {}, []
for i in range(120):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(20)
        s.connect(sock)
        r = call(s, {"op": "hello", "id": 1, "version": 1})
        if not r or r.get("op") != "hello":
            counts["refused"] = counts.get("refused", 0) + 1
            s.close()
            # Room for the next attempt: one session less.
            if held:
                held.pop(0).close()
            continue
        r = call(s, {"op": "open", "id": 2, "profile": "strict", "workspace": ws,
                     "overrides": {"limits": {"disk_mb": 20}}})
    except OSError as e:
        counts["refused"] = counts.get("refused", 0) + 1
        if held:
            held.pop(0).close()
        continue
    held.append(s)
    if r is None:
        k = "eof"
    elif r.get("op") == "error":
        k = "error " + r.get("code", "?")
    else:
        q = r["isolation"]["workspace_quota"]
        k = "opened enforced=%s" % q["enforced"]
        if not q["enforced"]:
            off.append(q["reason"])
    counts[k] = counts.get(k, 0) + 1
print("# 120 opens at ulimit -n 64: %r" % counts, flush=True)
say("at the fd limit an open with disk_mb is busy or enforced, never opened with the limit off",
    not off and not any(k.startswith("error") and k != "error busy" for k in counts), (counts, off[:2]))
say("some opens did hit the limit (busy)", counts.get("error busy", 0) > 0, counts)
for s in held:
    s.close()
EOF
collect "fd limit"
if ping_ok; then pass "the daemon serves on after the fd limit"; else fail "the daemon serves on after the fd limit"; fi
stop_daemon || true
wait_until 10 no_sandbox_of_ours || fail "no sandbox of this run is left (fd limit)" "$(our_sandbox_pids)"
finish

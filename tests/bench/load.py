#!/usr/bin/env python3
"""Load benchmark of mini-sandboxd: CLIENTS connections at once, each with
its own session and workspace, each running COMMANDS commands one after
the other; prints what came back and what the daemon used.  Figures only:
no time thresholds.

    tests/bench/load.py 64x100                 # starts its own daemon
    tests/bench/load.py --socket PATH 8x5      # uses a running daemon

Each command is `echo <client>-<n>-<random token>`, unique in the run, so
that a reply given to the wrong command, session or connection shows.
Every command ends in exactly one of:

  ok     an `exit` with returncode 0, no signal or limit, and the output
         exactly the expected line;
  wrong  any other `exit`, or a reply the protocol does not allow
         (tests/integration/pool_client.py checks every frame strictly):
         a mixed-up or damaged reply;
  error  an `error` reply other than busy (spawn_failed, ...): the
         command was refused or its sandbox could not be set up;
  lost   no reply: the host-side deadline (--cmd-timeout) passed, the
         connection was closed, or the command was never sent because its
         client could not connect or open its session for a reason other
         than busy;
  busy   the daemon refused it (or its client's connection or session)
         with `busy`: it is at one of its limits (hello.features.limits).

`sent` counts exec requests written, `exits` the exit events received.
Latency is per command, from sending `exec` to receiving its `exit`, with
one command in flight per client (so it includes waiting for the CPU).
runs/s is exits over the time from the moment every client has its
session to the last client's last exit.  While it runs, the daemon's
/proc/PID/status (VmRSS, VmHWM) and the number of its open fds are sampled
every --sample-ms ms.

Exit status: 0 when wrong, error and lost are all 0 and no busy came that the
daemon's limits did not predict; 1 otherwise; 2 when the benchmark could
not run (no daemon, bad arguments).  Standard library only.
"""

import argparse
import json
import multiprocessing
import os
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))

from pool_client import (PROTO_VERSION, Closed, Conn, DaemonError,  # noqa: E402
                         ProtocolError, Timeout)

CLIENT_NAME = "tests/bench/load.py"
DETAILS_PER_CLIENT = 3      # wrong/lost/busy examples kept per client


class SetupError(Exception):
    """The benchmark cannot run (exit status 2)."""


# ---------------------------------------------------------------- protocol

def hello(conn):
    """hello on a new connection; the reply.  A daemon at its connection
    limit answers with `error` busy (id null) and closes: DaemonError."""
    rid = conn.request("hello", version=PROTO_VERSION, client=CLIENT_NAME)
    msg = conn.read_frame()
    if msg["op"] == "error" and msg["id"] is None:
        raise DaemonError(msg)
    conn._dispatch(msg)     # the strict client's check that msg answers rid
    return conn.reply(rid)


def peer_pid(path):
    """The pid of the process listening on the Unix socket path."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(5)
        s.connect(path)
        cred = s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", cred)[0]
    finally:
        s.close()


# ---------------------------------------------------------------- one client

def new_result(k):
    # busy_exec: exec requests answered busy (the rest of busy was never
    # sent: its client's connection or session was refused); busy_why:
    # "where: message" -> commands.
    return {"client": k, "sent": 0, "exits": 0, "ok": 0, "wrong": 0, "error": 0, "lost": 0, "busy": 0,
            "busy_exec": 0, "busy_why": {}, "lat_ms": [], "open_ms": None, "t0": None,
            "t1": None, "details": [], "refused": None}


def client_main(k, sock, ws, ncmd, profile, cmd_timeout, go, go_timeout, q):
    """Client k: connect, open a session on ws, say ("ready", k) on q,
    wait for go (every client ready), run ncmd commands one at a time; put
    ("done", its figures) on q."""
    r = new_result(k)

    def note(kind, text):
        if len([d for d in r["details"] if d.startswith(kind)]) < DETAILS_PER_CLIENT:
            r["details"].append(f"{kind}: client {k}: {text}")

    def busy(where, e, n=1):
        r["busy"] += n
        why = f"{where}: {e}"
        r["busy_why"][why] = r["busy_why"].get(why, 0) + n

    conn = sess = None
    setup_fail = None     # (outcome, why) when the client cannot run its commands
    stage = "connect"
    try:
        conn = Conn(sock, cmd_timeout)
        stage = "hello"
        hello(conn)
        stage = "open"
        t = time.monotonic()
        sess = conn.open(ws, profile=profile, timeout=cmd_timeout)
        r["open_ms"] = (time.monotonic() - t) * 1000
    except DaemonError as e:
        if e.reply["id"] is None:
            stage = "connect"   # refused at accept: the error answers no request
        setup_fail = ("busy" if e.code == "busy" else "lost", e)
        r["refused"] = f"{stage}: {e.code}"
    except (Timeout, Closed, ProtocolError, OSError) as e:
        setup_fail = ("lost", f"{type(e).__name__}: {e}")
    q.put(("ready", k))
    go.wait(go_timeout)
    r["t0"] = time.monotonic()
    i = 0
    try:
        if setup_fail and setup_fail[0] == "busy":
            busy(stage, setup_fail[1], ncmd)
            i = ncmd
        elif setup_fail:
            r["lost"] += ncmd
            note("lost", f"{stage} failed: {setup_fail[1]} ({ncmd} commands not sent)")
            i = ncmd
        while i < ncmd:
            want = f"{k}-{i}-{secrets.token_hex(6)}"
            i += 1
            t = time.monotonic()
            try:
                rid = conn.exec(sess, f"echo {want}")
                r["sent"] += 1
                ex = conn.wait_exit(rid, timeout=cmd_timeout)
            except DaemonError as e:
                if e.code == "busy":
                    busy("exec", e)
                    r["busy_exec"] += 1
                else:
                    r["error"] += 1
                    note("error", f"command {i - 1}: {e}")
                continue
            except ProtocolError as e:
                r["wrong"] += 1
                note("wrong", f"command {i - 1}: {e}; connection given up")
                break
            except Timeout:
                r["lost"] += 1
                note("lost", f"command {i - 1}: no exit within {cmd_timeout:g} s; connection given up")
                break
            except (Closed, OSError) as e:
                r["lost"] += 1
                note("lost", f"command {i - 1}: {type(e).__name__}: {e}")
                break
            r["lat_ms"].append((time.monotonic() - t) * 1000)
            r["exits"] += 1
            if (ex["returncode"] == 0 and ex["signal"] == 0 and ex["limit"] is None
                    and not ex["truncated"] and ex["output"] == want + "\n"):
                r["ok"] += 1
            else:
                r["wrong"] += 1
                note("wrong", f"command {i - 1}: expected {want!r}, got returncode {ex['returncode']} "
                     f"signal {ex['signal']} limit {ex['limit']} output {ex['output'][:200]!r}")
        if i < ncmd:
            r["lost"] += ncmd - i
            note("lost", f"{ncmd - i} commands not sent after the connection was given up")
        r["t1"] = time.monotonic()
        if sess is not None and i == ncmd and r["lost"] == 0 and not conn.eof:
            try:
                conn.close_session(sess)
            except Exception as e:
                note("close", f"close: {type(e).__name__}: {e}")
    except Exception as e:      # a bug here: count what is left, say why
        left = ncmd - (r["ok"] + r["wrong"] + r["error"] + r["lost"] + r["busy"])
        r["lost"] += left
        note("lost", f"client crashed: {type(e).__name__}: {e}")
    finally:
        if r["t1"] is None:
            r["t1"] = time.monotonic()
        if conn:
            conn.close()
        q.put(("done", r))


# ---------------------------------------------------------------- the daemon

class Daemon:
    """The daemon under test: started here (and stopped, by pid), or found
    behind --socket."""

    def __init__(self, args, tmp):
        self.proc = None
        self.log = None
        self.sock = args.socket
        if self.sock:
            self.pid = peer_pid(self.sock)
            return
        exe = os.path.join(args.bin, "mini-sandboxd")
        if not os.access(exe, os.X_OK):
            raise SetupError(f"{exe} is not built (--bin, or MINI_BIN)")
        run = os.path.join(tmp, "run")
        state = os.path.join(tmp, "state")
        os.mkdir(run, 0o700)
        os.mkdir(state, 0o700)
        self.sock = os.path.join(run, "sock")
        self.log = os.path.join(tmp, "daemon.log")
        cmd = [exe, "--socket", self.sock, "--state-dir", state, "--foreground"]
        if os.path.isfile(os.path.join(args.profiles, "strict.json")):
            cmd += ["--profiles", args.profiles]
        with open(self.log, "ab") as lf:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=lf, stderr=lf)
        self.pid = self.proc.pid
        deadline = time.monotonic() + 10
        while True:
            if self.proc.poll() is not None:
                raise SetupError(f"mini-sandboxd exited with status {self.proc.returncode}; "
                                 f"its log:\n{self.log_tail()}")
            try:
                c = Conn(self.sock, 5)
                try:
                    hello(c)
                    return
                finally:
                    c.close()
            except (OSError, Timeout, Closed, ProtocolError, DaemonError):
                if time.monotonic() > deadline:
                    self.stop()
                    raise SetupError(f"mini-sandboxd did not answer hello within 10 s; its log:\n"
                                     f"{self.log_tail()}")
                time.sleep(0.05)

    def log_tail(self, n=20):
        try:
            with open(self.log, errors="replace") as f:
                return "".join("    | " + l for l in f.readlines()[-n:])
        except OSError:
            return "    (no log)"

    def stop(self):
        """SIGTERM, at most 10 s, then SIGKILL; the exit status (None when
        it is not ours)."""
        if not self.proc:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def sample(pid):
    """(VmRSS kB, VmHWM kB, open fds) of pid; None for what cannot be read."""
    rss = hwm = fds = None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
    except (OSError, ValueError):
        pass
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        pass
    return rss, hwm, fds


def stats(sock):
    c = Conn(sock, 10)
    try:
        hello(c)
        return c.stats()
    finally:
        c.close()


# ---------------------------------------------------------------- figures

def pct(xs, p):
    """Nearest-rank percentile of sorted xs; None when empty."""
    if not xs:
        return None
    i = max(0, min(len(xs) - 1, int(-(-p * len(xs) // 100)) - 1))
    return xs[i]


def mib(kb):
    return None if kb is None else round(kb / 1024, 1)


def fmt(v, nd=1):
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def parse_spec(s):
    try:
        c, n = s.lower().split("x")
        c, n = int(c), int(n)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r}: expected CLIENTSxCOMMANDS, e.g. 64x100") from None
    if c < 1 or n < 1:
        raise argparse.ArgumentTypeError(f"{s!r}: both numbers must be at least 1")
    return c, n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("spec", type=parse_spec, metavar="CLIENTSxCOMMANDS",
                    help="e.g. 64x100: 64 clients at once, 100 commands each")
    ap.add_argument("--socket", help="use the daemon listening here instead of starting one")
    ap.add_argument("--bin", default=os.environ.get("MINI_BIN") or os.path.join(SRC, "build", "bin"),
                    help="where mini-sandboxd is (default $MINI_BIN, else build/bin)")
    ap.add_argument("--profiles", default=os.path.join(SRC, "profiles"),
                    help="the daemon's --profiles (default: the source tree's)")
    ap.add_argument("--profile", default="strict", help="the sessions' profile (default strict)")
    ap.add_argument("--tmpdir", help="where to make the temp dir (workspaces, socket, state, log)")
    ap.add_argument("--ws-uid", type=int, default=int(os.environ.get("MINI_TEST_WS_UID", 65534)),
                    help="as root with a root daemon, the workspaces' owner (default 65534)")
    ap.add_argument("--ws-gid", type=int, default=int(os.environ.get("MINI_TEST_WS_GID", 65534)))
    ap.add_argument("--cmd-timeout", type=float, default=60.0,
                    help="host-side deadline for one command's exit, s (default 60): past it, lost")
    ap.add_argument("--sample-ms", type=float, default=50.0, help="sampling period (default 50)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (printed)")
    args = ap.parse_args(argv)
    nclients, ncmd = args.spec
    # SIGTERM (a host-side timeout) stops the clients and the daemon too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    tmp = tempfile.mkdtemp(prefix="mini-load.", dir=args.tmpdir)
    held = {"daemon": None, "procs": []}   # what to stop, whatever happens
    try:
        return run(args, nclients, ncmd, tmp, held)
    except SetupError as e:
        print(f"load.py: {e}", file=sys.stderr)
        return 2
    finally:
        for p in held["procs"]:
            if p.is_alive():
                p.kill()
            p.join(5)
        if held["daemon"]:
            held["daemon"].stop()
        if args.keep:
            print(f"# kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def run(args, nclients, ncmd, tmp, held):
    root = os.geteuid() == 0
    if root:
        os.chmod(tmp, 0o711)    # the workspaces' owner must reach them
    daemon = held["daemon"] = Daemon(args, tmp)
    sock = daemon.sock
    procs = held["procs"]

    # What the daemon is, and its limits: would they refuse this load?
    c = Conn(sock, 10)
    try:
        h = hello(c)
        st0 = c.stats()
    finally:
        c.close()
    feat = h["features"]
    duid = feat.get("uid")
    limits = feat.get("limits") or {}
    need = {"connections": nclients, "sessions": nclients, "running": nclients}
    over = [f"{nclients} clients > {limits[k]} {k.replace('_', ' ')}"
            for k in need if isinstance(limits.get(k), (int, float)) and need[k] > limits[k]]
    busy_expected = bool(over) or not limits
    if over:
        busy_note = "busy expected: the daemon's limits: " + "; ".join(over)
    elif limits:
        busy_note = (f"within the daemon's limits ({limits.get('connections')} connections, "
                     f"{limits.get('sessions')} sessions, {limits.get('running')} running commands): "
                     f"no busy expected")
    else:
        busy_note = "the daemon states no limits: busy not predicted either way"

    # One workspace per client.
    owner = None
    if root and duid == 0:
        owner = (args.ws_uid, args.ws_gid)
    elif root and isinstance(duid, int) and duid != 0:
        owner = (duid, duid)
    wsroot = os.path.join(tmp, "ws")
    os.mkdir(wsroot, 0o711 if root else 0o700)
    wss = []
    for k in range(nclients):
        w = os.path.join(wsroot, f"c{k}")
        os.mkdir(w, 0o700)
        if owner:
            os.chown(w, *owner)
        wss.append(w)

    period = args.sample_ms / 1000
    base = sample(daemon.pid)
    peak = {"rss": base[0], "hwm": base[1], "fds": base[2], "samples": 1}

    def take():
        s = sample(daemon.pid)
        peak["samples"] += 1
        for key, v in zip(("rss", "hwm", "fds"), s):
            if v is not None and (peak[key] is None or v > peak[key]):
                peak[key] = v

    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    go = ctx.Event()
    # A client's setup is bounded by its connect, hello and open deadlines.
    go_timeout = 3 * args.cmd_timeout + 10
    for k in range(nclients):
        p = ctx.Process(target=client_main, name=f"load-client-{k}",
                        args=(k, sock, wss[k], ncmd, args.profile, args.cmd_timeout,
                              go, go_timeout, q))
        p.start()
        procs.append(p)
    ready = set()
    results = {}
    t_start = time.monotonic()
    # Give up on clients only well after their own deadlines could have fired.
    deadline = t_start + go_timeout + ncmd * (args.cmd_timeout + 1) + 30
    next_sample = t_start
    # Sample while the clients connect and open their sessions; once every
    # one has (or the setup deadline passed), let them all go at once.
    while len(results) < nclients and time.monotonic() < deadline:
        try:
            kind, r = q.get(timeout=max(0.001, next_sample - time.monotonic()))
            if kind == "ready":
                ready.add(r)
            else:
                results[r["client"]] = r
        except Exception:   # queue.Empty
            pass
        if not go.is_set() and (len(ready) == nclients or time.monotonic() - t_start > go_timeout):
            go.set()
        if time.monotonic() >= next_sample:
            take()
            next_sample += period
            if next_sample < time.monotonic():
                next_sample = time.monotonic() + period
    go.set()
    take()
    hung = [k for k in range(nclients) if k not in results]
    for k in hung:          # never reported: its commands are lost
        procs[k].kill()
        results[k] = new_result(k)
        results[k]["lost"] = ncmd
        results[k]["details"].append(f"lost: client {k}: did not report before the benchmark's deadline")
    for p in procs:
        p.join(10)

    # After: the daemon settles back (sessions closed, sandboxes reaped).
    odd = []
    st1 = None
    settle = time.monotonic() + 10
    while True:
        try:
            st1 = stats(sock)
        except Exception as e:
            odd.append(f"stats after the run failed: {type(e).__name__}: {e}")
            break
        if (st1["sessions"] == 0 and st1["running"] == 0) or time.monotonic() > settle:
            break
        time.sleep(0.1)
    if st1 and (st1["sessions"] or st1["running"]):
        odd.append(f"10 s after every client closed, the daemon still reports "
                   f"{st1['sessions']} session(s) and {st1['running']} running command(s)")
    time.sleep(0.2)
    after = sample(daemon.pid)
    exit_status = daemon.stop()
    if exit_status not in (None, 0):
        odd.append(f"mini-sandboxd exited with status {exit_status} on SIGTERM; its log:\n"
                   + daemon.log_tail())

    # Figures.
    R = [results[k] for k in range(nclients)]
    tot = {f: sum(r[f] for r in R) for f in ("sent", "exits", "ok", "wrong", "error", "lost", "busy",
                                          "busy_exec")}
    busy_why = {}
    for r in R:
        for why, n in r["busy_why"].items():
            busy_why[why] = busy_why.get(why, 0) + n
    lat = sorted(x for r in R for x in r["lat_ms"])
    opens = sorted(r["open_ms"] for r in R if r["open_ms"] is not None)
    t0s = [r["t0"] for r in R if r["t0"] is not None]
    t1s = [r["t1"] for r in R if r["t1"] is not None]
    wall = (max(t1s) - min(t0s)) if t0s and t1s else None
    planned = nclients * ncmd
    assert sum(tot[f] for f in ("ok", "wrong", "error", "lost", "busy")) == planned, tot
    execs = (st1["execs_total"] - st0["execs_total"]) if st1 else None
    if execs is not None and execs != tot["sent"] - tot["busy_exec"]:
        odd.append(f"the daemon counted {execs} commands started, the clients sent "
                   f"{tot['sent']} ({tot['busy_exec']} of them answered busy)")
    refused = {}
    for r in R:
        if r["refused"]:
            refused[r["refused"]] = refused.get(r["refused"], 0) + 1
    unexpected_busy = tot["busy"] > 0 and not busy_expected
    mode = "root" if duid == 0 else (f"rootless, uid {duid}" if duid is not None else "?")
    res = {
        "bench": "load", "clients": nclients, "commands": ncmd, "planned": planned,
        "profile": args.profile, "daemon": h.get("server"), "daemon_uid": duid, "mode": mode,
        "limits_by": feat.get("limits_by"),
        **tot,
        "clients_refused": refused, "busy_why": busy_why,
        "p50_ms": pct(lat, 50), "p90_ms": pct(lat, 90), "p99_ms": pct(lat, 99),
        "max_ms": lat[-1] if lat else None,
        "open_p50_ms": pct(opens, 50), "open_max_ms": opens[-1] if opens else None,
        "wall_s": wall, "runs_per_s": (tot["exits"] / wall) if wall else None,
        "daemon_pid": daemon.pid,
        "daemon_hwm_mib": mib(peak["hwm"]), "daemon_rss_max_sampled_mib": mib(peak["rss"]),
        "daemon_rss_idle_mib": mib(base[0]), "daemon_rss_after_mib": mib(after[0]),
        "daemon_fds_peak": peak["fds"], "daemon_fds_idle": base[2], "daemon_fds_after": after[2],
        # fds the daemon says it holds for the next session (stats.held_ahead:
        # a root daemon's id map made ahead); the leak check allows these.
        "daemon_fds_held_ahead": (st1 or {}).get("held_ahead", 0),
        "samples": peak["samples"], "sample_ms": args.sample_ms,
        "daemon_execs": execs, "busy_expected": busy_expected,
        "daemon_exit_status": exit_status, "odd": odd,
    }
    for key in ("p50_ms", "p90_ms", "p99_ms", "max_ms", "open_p50_ms", "open_max_ms", "wall_s",
                "runs_per_s"):
        if res[key] is not None:
            res[key] = round(res[key], 2)

    cols = ["clients x commands", "sent", "exits", "ok", "wrong", "error", "lost", "busy", "p50 ms",
            "p90 ms", "p99 ms", "runs/s", "daemon peak RSS MiB", "peak fds"]
    vals = [f"{nclients} x {ncmd}", tot["sent"], tot["exits"], tot["ok"], tot["wrong"], tot["error"], tot["lost"],
            tot["busy"], fmt(res["p50_ms"]), fmt(res["p90_ms"]), fmt(res["p99_ms"]),
            fmt(res["runs_per_s"]), fmt(res["daemon_hwm_mib"]), fmt(res["daemon_fds_peak"])]
    widths = [max(len(c), len(str(v))) for c, v in zip(cols, vals)]
    print(f"# mini-sandboxd load: {h.get('server')}, pid {daemon.pid}, {mode}, "
          f"limits by {feat.get('limits_by')}, profile {args.profile}")
    print(f"# {busy_note}")
    print(" | ".join(c.rjust(w) for c, w in zip(cols, widths)))
    print("-|-".join("-" * w for w in widths))
    print(" | ".join(str(v).rjust(w) for v, w in zip(vals, widths)))
    print(f"# latency max {fmt(res['max_ms'])} ms; open p50 {fmt(res['open_p50_ms'])} ms, "
          f"max {fmt(res['open_max_ms'])} ms; {fmt(res['wall_s'], 2)} s for the commands")
    print(f"# daemon RSS MiB: idle {fmt(res['daemon_rss_idle_mib'])}, sampled max "
          f"{fmt(res['daemon_rss_max_sampled_mib'])}, VmHWM {fmt(res['daemon_hwm_mib'])}, after "
          f"{fmt(res['daemon_rss_after_mib'])}; fds: idle {fmt(base[2])}, peak {fmt(peak['fds'])}, "
          f"after {fmt(after[2])} ({peak['samples']} samples every {args.sample_ms:g} ms); "
          f"commands the daemon started: {fmt(execs)}")
    if refused:
        print("# clients refused at connect/open: "
              + ", ".join(f"{n} with {code}" for code, n in sorted(refused.items())))
    for why, n in sorted(busy_why.items(), key=lambda x: -x[1]):
        print(f"# busy: {n} command(s): {why}")
    if unexpected_busy:
        print(f"# UNEXPECTED: {tot['busy']} command(s) answered busy although {nclients} clients "
              f"are within the daemon's limits")
    shown = 0
    for r in R:
        for d in r["details"]:
            if shown < 20:
                print(f"#   {d}")
            shown += 1
    if shown > 20:
        print(f"#   ... and {shown - 20} more")
    for o in odd:
        print(f"# odd: {o}")
    print(json.dumps(res, separators=(",", ":")))
    sys.stdout.flush()
    good = tot["wrong"] == 0 and tot["error"] == 0 and tot["lost"] == 0 and not unexpected_busy
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())

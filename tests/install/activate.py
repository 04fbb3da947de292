#!/usr/bin/env python3
"""Start mini-sandboxd the way systemd does from a .socket/.service pair.

    activate.py --socket-unit U.socket --service-unit U.service
                [--runtime-dir DIR] [--bin-dir DIR] [--log FILE] [--ready FILE]

Reads ListenStream=, DirectoryMode= and SocketMode= from the socket unit
(%t is the runtime directory, $XDG_RUNTIME_DIR by default) and ExecStart=
from the service unit (its program is taken from --bin-dir when given: the
units name the install's path).  Creates the directory and the listening
socket, writes the socket's path to --ready, then, like systemd with
Accept=no, waits until a client connects and starts the service with the
socket as fd 3, LISTEN_FDS=1 and LISTEN_PID set to the service's pid.  When
the service exits the socket stays (it is the harness's), and the next
connection starts the service again.  SIGTERM: the service gets SIGTERM, the
harness waits for it, removes the socket (RemoveOnStop=) and exits.
Each start and exit is a line on stdout ("started PID", "exited PID STATUS");
after --max-starts starts it gives up, as systemd's start limit does.
"""
import argparse
import os
import select
import shlex
import signal
import socket
import sys
import time


def unit_values(path):
    values = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;[" or "=" not in line:
                continue
            key, value = line.split("=", 1)
            values.setdefault(key.strip(), value.strip())
    return values


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket-unit", required=True)
    ap.add_argument("--service-unit", required=True)
    ap.add_argument("--runtime-dir", default=os.environ.get("XDG_RUNTIME_DIR", ""))
    ap.add_argument("--bin-dir")
    ap.add_argument("--ready")
    ap.add_argument("--max-starts", type=int, default=5)
    a = ap.parse_args()

    sock_unit = unit_values(a.socket_unit)
    svc_unit = unit_values(a.service_unit)
    path = sock_unit["ListenStream"].replace("%t", a.runtime_dir)
    if not path.startswith("/"):
        sys.exit(f"activate: ListenStream={path}: only an absolute path is supported here")
    os.makedirs(os.path.dirname(path), mode=int(sock_unit.get("DirectoryMode", "0755"), 8), exist_ok=True)
    os.chmod(os.path.dirname(path), int(sock_unit.get("DirectoryMode", "0755"), 8))
    if os.path.exists(path):
        os.unlink(path)
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lsock.bind(path)
    os.chmod(path, int(sock_unit.get("SocketMode", "0666"), 8))
    lsock.listen(128)

    argv = shlex.split(svc_unit["ExecStart"])
    if a.bin_dir:
        argv[0] = os.path.join(a.bin_dir, os.path.basename(argv[0]))

    stopping = False

    def on_term(signo, frame):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    if a.ready:
        with open(a.ready + ".tmp", "w") as f:
            f.write(path + "\n")
        os.rename(a.ready + ".tmp", a.ready)

    child = None
    starts = 0
    while not stopping:
        if child is None:
            try:
                r, _, _ = select.select([lsock], [], [], 0.2)
            except InterruptedError:
                continue
            if r and starts >= a.max_starts:
                # systemd's start rate limit: the socket unit fails.
                print(f"giving up after {starts} starts", flush=True)
                break
            if r:
                starts += 1
                child = os.fork()
                if child == 0:
                    if lsock.fileno() != 3:
                        os.dup2(lsock.fileno(), 3)
                    os.set_inheritable(3, True)  # as systemd passes it
                    os.environ["LISTEN_FDS"] = "1"
                    os.environ["LISTEN_PID"] = str(os.getpid())
                    os.environ["LISTEN_FDNAMES"] = os.path.basename(a.socket_unit)
                    try:
                        os.execv(argv[0], argv)
                    finally:
                        os._exit(127)
                print(f"started {child}", flush=True)
        else:
            try:
                pid, status = os.waitpid(child, os.WNOHANG)
            except InterruptedError:
                continue
            if pid == child:
                print(f"exited {child} {os.waitstatus_to_exitcode(status)}", flush=True)
                child = None
            else:
                time.sleep(0.05)
    if child is not None:
        os.kill(child, signal.SIGTERM)
        _, status = os.waitpid(child, 0)
        print(f"exited {child} {os.waitstatus_to_exitcode(status)}", flush=True)
    lsock.close()
    if sock_unit.get("RemoveOnStop", "no") in ("yes", "true", "1", "on"):
        os.unlink(path)


if __name__ == "__main__":
    main()

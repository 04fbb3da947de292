#!/usr/bin/env python3
"""The network allowlist's benchmark client (tests/bench/net_bench.sh runs it
inside sandboxes): MODE is "proxy" (through the sandbox's proxy on
127.0.0.1:3128, the name pkg.test) or "direct" (straight to 127.0.0.1:PORT:
a sandbox with the host's network).  Prints one JSON line:

  download_mb_s   best of RUNS downloads of SIZE bytes (plain HTTP)
  connect_ms      per connection: a tunnel (CONNECT ... 200) through the proxy,
                  a TCP connect direct; p50 and p90 over N connections
  request_ms      per connection: connect, GET /bytes/1, the whole reply

usage: net_bench.py MODE PORT SIZE RUNS N
"""
import json
import socket
import sys
import time

PROXY = ("127.0.0.1", 3128)


def open_conn(mode, port):
    if mode == "direct":
        return socket.create_connection(("127.0.0.1", port), timeout=60)
    return socket.create_connection(PROXY, timeout=60)


def request(mode, port, path):
    if mode == "direct":
        return ("GET %s HTTP/1.1\r\nHost: pkg.test:%d\r\n\r\n" % (path, port)).encode()
    return ("GET http://pkg.test:%d%s HTTP/1.1\r\nHost: pkg.test:%d\r\n\r\n" % (port, path, port)).encode()


def read_reply(s, size):
    """Read a reply with a body of `size` bytes; returns the body length."""
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(65536)
        if not chunk:
            raise RuntimeError("closed in the head")
        head += chunk
    hdr, rest = head.split(b"\r\n\r\n", 1)
    if b" 200 " not in hdr.split(b"\r\n", 1)[0]:
        raise RuntimeError(hdr.split(b"\r\n", 1)[0].decode())
    got = len(rest)
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    while got < size:
        n = s.recv_into(view)
        if n == 0:
            break
        got += n
    return got


def download(mode, port, size):
    s = open_conn(mode, port)
    t0 = time.perf_counter()
    s.sendall(request(mode, port, "/bytes/%d" % size))
    got = read_reply(s, size)
    dt = time.perf_counter() - t0
    s.close()
    if got != size:
        raise RuntimeError("got %d of %d bytes" % (got, size))
    return size / dt / 1e6


def connect_once(mode, port):
    t0 = time.perf_counter()
    s = open_conn(mode, port)
    if mode == "proxy":
        s.sendall(("CONNECT pkg.test:%d HTTP/1.1\r\nHost: pkg.test:%d\r\n\r\n" % (port, port)).encode())
        r = s.recv(4096)
        if b" 200 " not in r:
            raise RuntimeError(r[:80])
    dt = time.perf_counter() - t0
    s.close()
    return dt * 1000


def request_once(mode, port):
    t0 = time.perf_counter()
    s = open_conn(mode, port)
    s.sendall(request(mode, port, "/bytes/1"))
    read_reply(s, 1)
    dt = time.perf_counter() - t0
    s.close()
    return dt * 1000


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))]


def main():
    mode, port, size, runs, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    rates = [download(mode, port, size) for _ in range(runs)]
    conn = [connect_once(mode, port) for _ in range(n)]
    req = [request_once(mode, port) for _ in range(n)]
    print(json.dumps({
        "mode": mode, "size": size,
        "download_mb_s": max(rates),
        "connect_p50_ms": pct(conn, 0.5), "connect_p90_ms": pct(conn, 0.9),
        "request_p50_ms": pct(req, 0.5), "request_p90_ms": pct(req, 0.9),
    }))


if __name__ == "__main__":
    main()

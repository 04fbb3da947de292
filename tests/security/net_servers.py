#!/usr/bin/env python3
"""Local test servers for the network allowlist tests (tests/security/net_allow.sh)
and its benchmark (tests/bench/net_bench.sh): an HTTP and an HTTPS server on
127.0.0.1, ephemeral ports, threaded, serving DIR.  GET /bytes/N answers N
bytes (any size, generated, not read from disk).  A third port is a sink:
it reads what a connection sends until it ends.  Writes "HTTP_PORT
HTTPS_PORT SINK_PORT" to PORTFILE once all listen, then serves until killed.

usage: net_servers.py DIR CERT KEY PORTFILE
"""
import http.server
import os
import ssl
import sys
import socketserver
import threading

CHUNK = b"x" * (1 << 20)


class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.startswith("/bytes/"):
            try:
                n = int(self.path[len("/bytes/"):])
            except ValueError:
                self.send_error(400)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            try:
                while n > 0:
                    k = min(n, len(CHUNK))
                    self.wfile.write(CHUNK[:k])
                    n -= k
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        super().do_GET()


class Sink(socketserver.BaseRequestHandler):
    def handle(self):
        try:
            while self.request.recv(1 << 16):
                pass
        except OSError:
            pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # listen()'s backlog: 100 clients at once


def serve(srv):
    srv.serve_forever()


def main():
    root, cert, key, portfile = sys.argv[1:5]
    os.chdir(root)
    plain = Server(("127.0.0.1", 0), Handler)
    tls = Server(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
    socketserver.ThreadingTCPServer.daemon_threads = True
    sink = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Sink)
    for s in (plain, tls, sink):
        threading.Thread(target=serve, args=(s,), daemon=True).start()
    tmp = portfile + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d %d %d\n" % (plain.server_address[1], tls.server_address[1], sink.server_address[1]))
    os.rename(tmp, portfile)
    threading.Event().wait()


if __name__ == "__main__":
    main()

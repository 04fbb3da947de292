#!/usr/bin/env python3
"""A registry front for tests/image/pull.sh: forwards to a real registry
on loopback, logs every request, and misbehaves as asked.

  registry_proxy.py PORTFILE UPSTREAM_PORT LOG MODE [CDN_HOST]

PORTFILE gets the port it listens on (127.0.0.1, a free port).  Each
request is logged as one JSON line: server ("reg" or "cdn"), method,
path, range, auth (the scheme of its Authorization header, or "").
MODE:
  plain   forward
  tamper  flip one byte in the body of the largest blob
  cut     the first GET of the largest blob is cut after half its body
  bearer  /v2/ wants a Bearer token (a challenge naming /token here, which
          hands out a fixed token anonymously); blobs are redirected to a
          second listener on CDN_HOST (another address: a "blob store"),
          which serves them and logs whether an Authorization came along
"""
import http.client
import http.server
import json
import socketserver
import sys
import threading

portfile, upstream, logpath, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
cdn_host = sys.argv[5] if len(sys.argv) > 5 else "127.0.0.2"
TOKEN = "test-token-0123456789"
lock = threading.Lock()
state = {"cut_done": False, "largest": None, "cdn_port": None, "port": None}


def log(server, handler):
    with lock, open(logpath, "a") as f:
        a = handler.headers.get("Authorization", "")
        f.write(json.dumps({"server": server, "method": handler.command, "path": handler.path,
                            "range": handler.headers.get("Range", ""), "auth": a.split(" ")[0] if a else "",
                            "token": TOKEN in a}) + "\n")


def largest_blob():
    """The digest of the largest layer of any manifest seen (set by the
    manifest responses)."""
    return state["largest"]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_name = "reg"

    def log_message(self, *a):
        pass

    def send_plain(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        try:
            self.handle_any()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went (a pull that failed)

    def handle_any(self):
        log(self.server_name, self)
        if self.server_name == "cdn":
            if self.headers.get("Authorization"):
                return self.send_plain(400, b"credentials sent to the blob store\n")
            return self.forward()
        if mode == "bearer":
            if self.path.startswith("/token"):
                return self.send_plain(200, json.dumps({"token": TOKEN}).encode(),
                                       [("Content-Type", "application/json")])
            if self.headers.get("Authorization") != "Bearer " + TOKEN:
                realm = f"http://127.0.0.1:{state['port']}/token"
                scope = ""
                parts = self.path.split("/")
                if len(parts) > 4:
                    scope = ',scope="repository:%s:pull"' % "/".join(parts[2:-2])
                return self.send_plain(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}',
                                       [("WWW-Authenticate", f'Bearer realm="{realm}",service="test"{scope}'),
                                        ("Content-Type", "application/json")])
            if "/blobs/" in self.path and self.command == "GET":
                return self.send_plain(307, b"", [("Location", f"http://{cdn_host}:{state['cdn_port']}{self.path}")])
        self.forward()

    def forward(self):
        c = http.client.HTTPConnection("127.0.0.1", upstream, timeout=60)
        hdrs = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "authorization", "connection")}
        c.request(self.command, self.path, headers=hdrs)
        r = c.getresponse()
        body_len = r.getheader("Content-Length")
        is_blob = "/blobs/sha256:" in self.path and self.command == "GET" and r.status in (200, 206)
        target = is_blob and self.path.endswith(largest_blob() or "-")
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("connection", "transfer-encoding"):
                self.send_header(k, v)
        if body_len is None:
            data = r.read()
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.end_headers()
        n = int(body_len)
        sent = 0
        cut = mode == "cut" and target and not state["cut_done"] and r.status == 200
        data_is_manifest = "/manifests/" in self.path
        buf = b""
        while sent < n:
            chunk = r.read(min(65536, n - sent))
            if not chunk:
                break
            if data_is_manifest:
                buf += chunk
            if mode == "tamper" and target and sent <= n // 2 < sent + len(chunk):
                i = n // 2 - sent
                chunk = chunk[:i] + bytes([chunk[i] ^ 0xFF]) + chunk[i + 1:]
            if cut and sent + len(chunk) > n // 2:
                chunk = chunk[: n // 2 - sent]
                self.wfile.write(chunk)
                self.wfile.flush()
                state["cut_done"] = True
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.wfile.write(chunk)
            sent += len(chunk)
        if data_is_manifest:
            try:
                m = json.loads(buf)
                layers = m.get("layers") or []
                if layers:
                    state["largest"] = max(layers, key=lambda l: l["size"])["digest"]
            except ValueError:
                pass


class CdnHandler(Handler):
    server_name = "cdn"


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


srv = Server(("127.0.0.1", 0), Handler)
state["port"] = srv.server_address[1]
if mode == "bearer":
    cdn = Server((cdn_host, 0), CdnHandler)
    state["cdn_port"] = cdn.server_address[1]
    threading.Thread(target=cdn.serve_forever, daemon=True).start()
with open(portfile + ".tmp", "w") as f:
    f.write(str(state["port"]))
import os

os.rename(portfile + ".tmp", portfile)
srv.serve_forever()

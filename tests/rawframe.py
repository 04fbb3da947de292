"""Raw frames of the mini-sandboxd protocol for the tests that must send
what a well-behaved client never would (cut frames, floods, readers that
stop): a 4-byte big-endian length, then one JSON object.  The strict client
is tests/integration/pool_client.py; this is the bare wire."""

import json
import struct


def frame(obj):
    """obj encoded as one frame."""
    b = json.dumps(obj).encode()
    return struct.pack(">I", len(b)) + b


def recv_frame(s):
    """The next frame from socket s, decoded; None at EOF (also inside a
    frame); socket.timeout when none comes in time."""
    hdr = b""
    while len(hdr) < 4:
        c = s.recv(4 - len(hdr))
        if not c:
            return None
        hdr += c
    n = struct.unpack(">I", hdr)[0]
    body = bytearray()
    while len(body) < n:
        c = s.recv(min(n - len(body), 1 << 20))
        if not c:
            return None
        body += c
    return json.loads(body)


def call(s, obj):
    """Send obj and return the first frame that echoes its id (None at EOF);
    frames for other ids are dropped."""
    s.sendall(frame(obj))
    while True:
        r = recv_frame(s)
        if r is None or r.get("id") == obj["id"]:
            return r

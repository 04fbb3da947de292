"""A small, strict client for the mini-sandboxd wire protocol (version 1).

Written for the tests (tests/integration/pool_checks.py) against
docs/protocol.md, with the standard library only.  Strict both ways:

- what it sends is built from known fields only (a typo is a TypeError
  here, not a request the daemon has to refuse);
- what it receives is checked as the document says: the frame length
  (1 .. 16 MiB), UTF-8, one JSON object without repeated keys, NaN or
  Infinity, with `op` and `id`, and for every reply and event the exact
  set of fields and their types.  Anything else raises ProtocolError;

and every read has a deadline, so a daemon that hangs makes a test fail
with Timeout instead of hanging it.

    from pool_client import connect
    c = connect("/run/mini/sandboxd.sock")          # sends hello
    sess = c.open("/path/to/workspace", profile="strict")
    r = c.run(sess, "echo hi")                       # the exit event
    assert r["returncode"] == 0 and r["output"] == "hi\\n"
    xid = c.exec(sess, "sleep 1; echo later")        # pipelined: returns the id
    r = c.wait_exit(xid, timeout=10)
    c.close_session(sess)
    c.close()

Events for requests other than the one being waited for are kept, in
order, and handed out when their own id is waited for; several commands
may therefore be in flight on one connection.  One Conn is meant for one
thread.
"""

import json
import socket
import struct
import time

PROTO_VERSION = 1
FRAME_MAX = 16 * 1024 * 1024
ID_MAX = 2 ** 53 - 1
DEFAULT_TIMEOUT = 30.0


class ProtocolError(Exception):
    """The daemon sent something the protocol does not allow."""


class Timeout(Exception):
    """No (complete) frame arrived before the deadline."""


class Closed(Exception):
    """The daemon closed the connection (at a frame boundary)."""


class DaemonError(Exception):
    """The daemon answered a request with an `error` reply."""

    def __init__(self, msg):
        self.reply = msg
        self.code = msg.get("code")
        super().__init__(f"{msg.get('code')}: {msg.get('message')}")


# ---------------------------------------------------------------- checking

def _is_int(v, lo=None, hi=None):
    # JSON numbers with an integer value (5, 5.0 and 5e0 are all 5).
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    if isinstance(v, float) and not v.is_integer():
        return False
    if lo is not None and v < lo:
        return False
    if hi is not None and v > hi:
        return False
    return True


def _is_str(v):
    return isinstance(v, str)


def _is_bool(v):
    return isinstance(v, bool)


def _is_obj(v):
    return isinstance(v, dict)


def _is_strs(v):
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _is_id(v):
    return _is_int(v, 0, ID_MAX)


def _is_limit(v):
    return v is None or v in ("timeout", "cancelled", "memory", "pids", "cpu",
                              "file_size", "disconnect", "shutdown", "disk")


# Every field of every message the daemon sends (besides op and id), and
# its type: "Every field listed is always present" (docs/protocol.md).
REPLY_FIELDS = {
    "hello": {"version": lambda v: _is_int(v, 1), "server": _is_str, "features": _is_obj},
    "opened": {"session": _is_str, "profile": _is_str, "isolation": _is_obj, "notes": _is_strs},
    "output": {"data": _is_str},
    "exit": {
        "returncode": lambda v: _is_int(v, 0, 255),
        "signal": lambda v: _is_int(v, 0, 127),
        "timed_out": _is_bool,
        "oom_killed": _is_bool,
        "output": _is_str,
        "truncated": _is_bool,
        "output_bytes": lambda v: _is_int(v, 0),
        "duration_ms": lambda v: _is_int(v, 0),
        "cpu_ms": lambda v: _is_int(v, 0),
        "max_rss_kb": lambda v: _is_int(v, 0),
        "limit": _is_limit,
        "notes": _is_strs,
    },
    "ok": {},
    "stats": {
        "sessions": lambda v: _is_int(v, 0),
        "running": lambda v: _is_int(v, 0),
        "execs_total": lambda v: _is_int(v, 0),
        "clients": lambda v: _is_int(v, 0),
        "uptime_ms": lambda v: _is_int(v, 0),
        "preparing": lambda v: _is_int(v, 0),
        "held_ahead": lambda v: _is_int(v, 0),
        "seccomp_programs": lambda v: _is_int(v, 0),
    },
    "error": {"code": _is_str, "message": _is_str},
}

# Which messages may answer which request (besides `error`).
ANSWERS = {
    "hello": ("hello",),
    "open": ("opened",),
    "exec": ("output", "exit"),
    "cancel": ("ok",),
    "close": ("ok",),
    "stats": ("stats",),
}


def _no_dup_keys(pairs):
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise ProtocolError(f"repeated key {k!r} in a reply")
        obj[k] = v
    return obj


def _no_constant(name):
    raise ProtocolError(f"non-finite number {name} in a reply")


def decode_payload(payload):
    """One frame's payload -> the checked message (a dict)."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ProtocolError(f"reply is not valid UTF-8: {e}") from None
    if "\0" in text:
        raise ProtocolError("reply contains a NUL")
    try:
        msg = json.loads(text, object_pairs_hook=_no_dup_keys, parse_constant=_no_constant)
    except ValueError as e:
        raise ProtocolError(f"reply is not JSON: {e}: {text[:200]!r}") from None
    check_message(msg)
    return msg


def check_message(msg):
    if not isinstance(msg, dict):
        raise ProtocolError(f"reply is not a JSON object: {msg!r:.200}")
    op = msg.get("op")
    if op not in REPLY_FIELDS:
        raise ProtocolError(f"reply with unknown op {op!r}: {json.dumps(msg)[:200]}")
    if "id" not in msg:
        raise ProtocolError(f"{op} reply without an id: {json.dumps(msg)[:200]}")
    if not (_is_id(msg["id"]) or (op == "error" and msg["id"] is None)):
        raise ProtocolError(f"{op} reply with a bad id {msg['id']!r}")
    fields = REPLY_FIELDS[op]
    extra = set(msg) - set(fields) - {"op", "id"}
    if extra:
        raise ProtocolError(f"{op} reply with unknown field(s) {sorted(extra)}: {json.dumps(msg)[:200]}")
    for name, ok in fields.items():
        if name not in msg:
            raise ProtocolError(f"{op} reply without field {name!r}: {json.dumps(msg)[:200]}")
        if not ok(msg[name]):
            raise ProtocolError(f"{op} reply: bad {name} {msg[name]!r:.100}")
    if _is_int(msg["id"]):
        msg["id"] = int(msg["id"])
    return msg


def encode(msg):
    data = json.dumps(msg, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    if not 1 <= len(data) <= FRAME_MAX:
        raise ValueError(f"request of {len(data)} bytes does not fit in a frame")
    return struct.pack(">I", len(data)) + data


# ---------------------------------------------------------------- the connection

class Conn:
    """One connection to the daemon.  Every read has a deadline."""

    def __init__(self, path, timeout=DEFAULT_TIMEOUT, sock=None):
        """path: the daemon's socket; or sock, a connected one (a private
        daemon's end of a socketpair, say), with path None."""
        self.path = path
        self.timeout = timeout
        self.sock = sock or socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        if sock is None:
            self.sock.connect(path)
        self._buf = b""
        self._next_id = 1
        self._pending = {}      # id -> [messages not yet handed out]
        self._inflight = {}     # id -> request op, until its last reply
        self.eof = False

    # ---- raw frames

    def send(self, msg):
        self.sock.settimeout(self.timeout)
        self.sock.sendall(encode(msg))

    def _fill(self, n, deadline):
        while len(self._buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout(f"no complete frame from the daemon within the deadline "
                              f"({len(self._buf)} byte(s) buffered)")
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(max(65536, n - len(self._buf)))
            except socket.timeout:
                continue
            if not chunk:
                self.eof = True
                if self._buf:
                    raise ProtocolError(f"connection closed inside a frame ({len(self._buf)} byte(s))")
                raise Closed("the daemon closed the connection")
            self._buf += chunk

    def read_frame(self, timeout=None):
        """The next message from the daemon (checked), within timeout s."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        self._fill(4, deadline)
        (n,) = struct.unpack(">I", self._buf[:4])
        if not 1 <= n <= FRAME_MAX:
            raise ProtocolError(f"bad frame length {n}")
        self._fill(4 + n, deadline)
        payload, self._buf = self._buf[4:4 + n], self._buf[4 + n:]
        return decode_payload(payload)

    # ---- requests and their replies

    def new_id(self):
        i = self._next_id
        self._next_id += 1
        return i

    def request(self, op, rid=None, **fields):
        """Send a request; its id (chosen here unless given)."""
        if op not in ANSWERS:
            raise ValueError(f"unknown op {op!r}")
        if rid is None:
            rid = self.new_id()
        if not _is_id(rid):
            raise ValueError(f"bad id {rid!r}")
        if rid in self._inflight:
            raise ValueError(f"id {rid} is still in use")
        msg = {"op": op, "id": rid}
        msg.update({k: v for k, v in fields.items() if v is not None})
        self._inflight[rid] = op
        self.send(msg)
        return rid

    def next_for(self, rid, timeout=None):
        """The next reply or event for request rid; frames for other ids
        are kept for later.  Raises Timeout when none comes in time."""
        if rid not in self._inflight and not self._pending.get(rid):
            raise ValueError(f"no request {rid} in progress")
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not self._pending.get(rid):
            self._dispatch(self.read_frame(max(0.0, deadline - time.monotonic())))
        return self._pending[rid].pop(0)

    def _dispatch(self, msg):
        # Check that msg answers a request in progress, and keep it.
        mid = msg["id"]
        if mid is None:
            raise ProtocolError(f"error for no request: {json.dumps(msg)[:300]}")
        op = self._inflight.get(mid)
        if op is None:
            raise ProtocolError(f"{msg['op']} for id {mid}, which has no request in progress: "
                                f"{json.dumps(msg)[:300]}")
        if msg["op"] != "error" and msg["op"] not in ANSWERS[op]:
            raise ProtocolError(f"{msg['op']} in answer to {op} (id {mid})")
        if msg["op"] != "output":
            del self._inflight[mid]     # the last message for that id
        self._pending.setdefault(mid, []).append(msg)

    def poll(self, wait=0.05):
        """Read and keep whatever frames arrive within wait s (no error
        when none does)."""
        deadline = time.monotonic() + wait
        while True:
            try:
                self._dispatch(self.read_frame(max(0.001, deadline - time.monotonic())))
            except Timeout:
                return
            if time.monotonic() >= deadline:
                return

    def has_final(self, rid, wait=0.05):
        """Whether the last reply of request rid has arrived (after
        reading what the daemon has sent within wait s)."""
        self.poll(wait)
        return rid not in self._inflight

    def reply(self, rid, timeout=None):
        """The final reply of a request; raises DaemonError on `error`."""
        while True:
            msg = self.next_for(rid, timeout)
            if msg["op"] == "output":
                continue
            if msg["op"] == "error":
                raise DaemonError(msg)
            return msg

    def busy_ids(self):
        return sorted(self._inflight)

    # ---- the operations

    def hello(self, client="pool_client.py"):
        r = self.reply(self.request("hello", version=PROTO_VERSION, client=client))
        if r["version"] != PROTO_VERSION:
            raise ProtocolError(f"hello: the daemon chose version {r['version']}")
        return r

    def open(self, workspace, profile=None, env=None, timeout=None):
        """Open a session; its name."""
        return self.reply(self.request("open", workspace=workspace, profile=profile, env=env), timeout)["session"]

    def exec(self, session, command=None, argv=None, rid=None, cwd=None, env=None,
             timeout=None, stdin=None, stream=None, last=None):
        """Start a command (shell form, or argv); its request id.  Take
        its events with next_for(id) or wait_exit(id)."""
        if (command is None) == (argv is None):
            raise ValueError("exactly one of command and argv")
        return self.request("exec", rid=rid, session=session, command=command, argv=argv, cwd=cwd,
                            env=env, timeout=timeout, stdin=stdin, stream=stream, last=last)

    def wait_exit(self, rid, timeout=None):
        """The exit event of exec rid (output events are skipped; with
        stream they are joined into exit["streamed"]).  DaemonError when
        the exec was refused."""
        streamed = []
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            msg = self.next_for(rid, max(0.0, deadline - time.monotonic()))
            if msg["op"] == "output":
                streamed.append(msg["data"])
                continue
            if msg["op"] == "error":
                raise DaemonError(msg)
            msg = dict(msg)
            msg["streamed"] = "".join(streamed)
            return msg

    def wait_output(self, rid, want, timeout=None):
        """Streamed output of exec rid until it contains want; the text so
        far.  The events are consumed: call wait_exit for the rest."""
        got = []
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while want not in "".join(got):
            msg = self.next_for(rid, max(0.0, deadline - time.monotonic()))
            if msg["op"] == "output":
                got.append(msg["data"])
                continue
            if msg["op"] == "error":
                raise DaemonError(msg)
            raise ProtocolError(f"exec {rid} ended before printing {want!r}: {json.dumps(msg)[:300]}")
        return "".join(got)

    def run(self, session, command=None, timeout=None, **kw):
        """Run one command to its end; the exit event."""
        return self.wait_exit(self.exec(session, command, **kw), timeout)

    def cancel(self, target):
        return self.reply(self.request("cancel", target=target))

    def close_session(self, session):
        return self.reply(self.request("close", session=session))

    def stats(self):
        return self.reply(self.request("stats"))

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def connect(path, timeout=DEFAULT_TIMEOUT, hello=True):
    """A connection to the daemon at path, after hello (unless hello=False)."""
    c = Conn(path, timeout)
    if hello:
        c.hello()
    return c

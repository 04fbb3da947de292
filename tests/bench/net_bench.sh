#!/bin/bash
# Benchmark of the network allowlist's proxy (sandbox/daemon/proxy.c): a
# download of BENCH_NET_MB (default 100) MB and the cost of setting up a
# connection, through the proxy (strict with an allowlist) against direct
# (permissive: the host's network, the same sandboxed client) to the same
# local server in the same run.  Prints a table with the ratios; fails only
# when a run fails, never on time.  BENCH_SMOKE=1: 4 MB and 20 connections.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
have python3 || skip_all "python3 is not installed"
have openssl || skip_all "openssl is not installed"

MB=${BENCH_NET_MB:-100}
N=${BENCH_NET_CONNS:-300}
RUNS=3
if [[ ${BENCH_SMOKE:-} == 1 ]]; then MB=4; N=20; RUNS=1; fi
SRV=$T/srv
mkdir -p "$SRV/www"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=pkg.test" -keyout "$SRV/key.pem" \
    -out "$SRV/cert.pem" >/dev/null 2>&1 || skip_all "openssl cannot make a certificate"
python3 "$MINI_SOURCE_DIR/tests/security/net_servers.py" "$SRV/www" "$SRV/cert.pem" "$SRV/key.pem" "$SRV/ports" \
    >"$T/servers.log" 2>&1 &
BG_PIDS+=($!)
wait_until 10 test -s "$SRV/ports" || { fail "test servers start" "$(cat "$T/servers.log")"; finish; }
read -r HP _ _ <"$SRV/ports"
start_daemon --resolve pkg.test:127.0.0.1
cp "$MINI_SOURCE_DIR/tests/bench/net_bench.py" "$WS/net_bench.py"
chmod 0644 "$WS/net_bench.py"
cat >"$T/allow.json" <<JSON
{"name": "bench-allow", "network": {"allow": ["pkg.test", "127.0.0.1"]},
 "limits": {"timeout_s": 600, "net_connections": 0, "net_in_mb": 0, "net_out_mb": 0}}
JSON
chmod 0644 "$T/allow.json"
SIZE=$((MB * 1024 * 1024))
run sbx --profile "$T/allow.json" -- python3 "$WS/net_bench.py" proxy "$HP" "$SIZE" "$RUNS" "$N"
PROXY=$OUT
[[ $RC == 0 ]] && pass "through the proxy" || fail "through the proxy" "status $RC: $ERR"
run sbx --profile permissive -- python3 "$WS/net_bench.py" direct "$HP" "$SIZE" "$RUNS" "$N"
DIRECT=$OUT
[[ $RC == 0 ]] && pass "direct" || fail "direct" "status $RC: $ERR"
if [[ -n $PROXY && -n $DIRECT ]]; then
    python3 - "$PROXY" "$DIRECT" "$MB" "$N" <<'PY'
import json, sys
p, d = json.loads(sys.argv[1]), json.loads(sys.argv[2])
mb, n = sys.argv[3], sys.argv[4]
print("    %-34s %12s %12s %10s" % ("", "proxy", "direct", "ratio"))
print("    %-34s %12.0f %12.0f %9.2fx" % ("download %s MB, MB/s (best of runs)" % mb, p["download_mb_s"],
                                          d["download_mb_s"], p["download_mb_s"] / d["download_mb_s"]))
for k, what in (("connect", "connection set up, ms"), ("request", "connect + GET 1 byte, ms")):
    for q in ("p50", "p90"):
        a, b = p["%s_%s_ms" % (k, q)], d["%s_%s_ms" % (k, q)]
        print("    %-34s %12.3f %12.3f %+9.3f ms" % ("%s %s (n=%s)" % (what, q, n), a, b, a - b))
print(json.dumps({"proxy": p, "direct": d}))
PY
fi
finish

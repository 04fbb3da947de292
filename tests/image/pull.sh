#!/bin/bash
# image pull from registries on loopback, offline: Debian's docker-registry
# (CNCF distribution) started here, images pushed to it with skopeo, and a
# Python front of ours (registry_proxy.py) that logs, demands Bearer tokens,
# redirects blobs to another host, flips a byte, or cuts a transfer.
#   (a) plain HTTP on loopback, then run --image the pulled name
#   (b) a second pull fetches no blob, and is fast
#   (c) by digest (and a wrong digest refused)
#   (d) an index of two platforms: the host's is taken
#   (e) TLS with a test CA (--cert-dir) and htpasswd basic auth: --creds,
#       an auth file ($REGISTRY_AUTH_FILE), wrong credentials refused
#   (f) the Bearer token flow, anonymous; the token stays off the blob host
#   (g) a tampered blob: the pull fails naming it, nothing left
#   (h) a transfer cut mid-blob: resumed with a Range request
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
. "$(dirname "${BASH_SOURCE[0]}")/image_lib.sh"
is_root || skip_all "needs root (the registries and the daemon's sandboxes as root)"
have docker-registry || skip_all "docker-registry is not installed (scripts/install-deps.sh --test)"
have skopeo || skip_all "skopeo is not installed (scripts/install-deps.sh --test)"
have openssl || skip_all "openssl is not installed"
have python3 || skip_all "python3 is not installed"
[[ -x /bin/busybox ]] || skip_all "busybox-static is not installed"
PROXY=$MINI_SOURCE_DIR/tests/image/registry_proxy.py

# start_proxy MODE UPSTREAM-PORT: registry_proxy.py; PROXY_PORT, PROXY_LOG.
start_proxy() {
    PROXY_LOG=$T/proxy-$1.log
    rm -f "$T/proxy.port"
    python3 "$PROXY" "$T/proxy.port" "$2" "$PROXY_LOG" "$1" &
    PROXY_PID=$!
    BG_PIDS+=("$PROXY_PID")
    cleanup_cmd "kill $PROXY_PID"
    wait_until 20 test -s "$T/proxy.port" || { log "FAIL: the proxy did not start"; exit 1; }
    PROXY_PORT=$(cat "$T/proxy.port")
}
stop_proxy() { kill "$PROXY_PID" 2>/dev/null; wait "$PROXY_PID" 2>/dev/null || true; }

# requests MATCH: how many the proxy logged whose JSON line has MATCH.
requests() { grep -c -- "$1" "$PROXY_LOG" 2>/dev/null || true; }

# The images: the busybox one (tag test), and a second with another
# config (--user) standing for another platform.
python3 "$MKIMAGE" oci "$T/bb" >/dev/null
python3 "$MKIMAGE" oci "$T/bb2" --user 1000 >/dev/null
PORT=$(free_port)
start_registry reg "$PORT"
REG=127.0.0.1:$PORT
push() { skopeo copy -q --dest-tls-verify=false "oci:$1" "docker://$2" >"$T/skopeo.log" 2>&1; }
push "$T/bb:test" "$REG/test/img:tag" || { cat "$T/skopeo.log"; log "FAIL: skopeo push"; exit 1; }
DIGEST=$(curl -sI -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$REG/v2/test/img/manifests/tag" |
    tr -d '\r' | awk 'tolower($1) == "docker-content-digest:" {print $2}')
CONFIG=$(curl -s -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$REG/v2/test/img/manifests/tag" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["config"]["digest"])')
start_daemon

# (a) plain HTTP on loopback; the image runs.
start_proxy plain "$PORT"
run img pull "127.0.0.1:$PROXY_PORT/test/img:tag"
if [[ $RC == 0 ]] && contains "$OUT" "$CONFIG" && [[ $(requests '/blobs/sha256:') == 3 ]]; then
    pass "(a) pull over plain HTTP on loopback: config and two layers fetched"
else fail "(a) pull over plain HTTP on loopback" "$(cat "$PROXY_LOG")"; fi
expect_eq "(a) run --image the pulled name" "hello from layer 2" \
    sbx --image "127.0.0.1:$PROXY_PORT/test/img:tag" -- cat /etc/motd
expect_out "(a) image ls shows the registry's name" "127.0.0.1:$PROXY_PORT/test/img:tag" img ls

# (b) again: only the manifest, no blob; fast.
: >"$PROXY_LOG"
t0=$(now_ms)
run img pull -q "127.0.0.1:$PROXY_PORT/test/img:tag"
t1=$(now_ms)
if [[ $RC == 0 && $(requests '/blobs/') == 0 && $(requests '/manifests/') == 1 ]] && ((t1 - t0 < 500)); then
    pass "(b) a second pull fetches no blob ($((t1 - t0)) ms)"
else fail "(b) a second pull fetches no blob" "took $((t1 - t0)) ms" "$(cat "$PROXY_LOG")"; fi
# The image removed, its layers kept (another name holds them): only
# the config is fetched, no layer.
run img import -q "$T/bb2:test" --name keep:layers
img rm "127.0.0.1:$PROXY_PORT/test/img:tag" >/dev/null
: >"$PROXY_LOG"
run img pull "127.0.0.1:$PROXY_PORT/test/img:tag"
if [[ $RC == 0 && $(requests '/blobs/') == 1 ]] && contains "$ERR" "already stored"; then
    pass "(b) layers stored under another image are not fetched"
else fail "(b) layers stored under another image are not fetched" "$(cat "$PROXY_LOG")"; fi
stop_proxy

# (c) by digest; a digest the registry does not have is refused.
run img pull "$REG/test/img@$DIGEST"
if [[ $RC == 0 ]] && contains "$OUT" "$CONFIG"; then pass "(c) pull by digest"; else fail "(c) pull by digest"; fi
expect_eq "(c) the image by its digest name" "hello from layer 2" sbx --image "$REG/test/img@$DIGEST" -- cat /etc/motd
run img pull "$REG/test/img@sha256:$(printf '0%.0s' {1..64})"
if [[ $RC == 1 ]] && contains "$ERR" "not found"; then pass "(c) an unknown digest: not found"
else fail "(c) an unknown digest: not found"; fi

# (d) an index of two platforms, pushed through the registry's API: the
# host's entry is taken, the other (another architecture) is not.
push "$T/bb2:test" "$REG/test/multi:other" && push "$T/bb:test" "$REG/test/multi:host" ||
    { cat "$T/skopeo.log"; log "FAIL: skopeo push"; exit 1; }
HOST_ARCH=$(case $(uname -m) in x86_64) echo amd64 ;; aarch64) echo arm64 ;; *) uname -m ;; esac)
OTHER_ARCH=$([[ $HOST_ARCH == s390x ]] && echo amd64 || echo s390x)
run python3 - "$REG" "$HOST_ARCH" "$OTHER_ARCH" <<'PY'
import http.client, json, sys
reg, host_arch, other_arch = sys.argv[1:4]
mt = "application/vnd.oci.image.manifest.v1+json"
def head(tag):
    c = http.client.HTTPConnection(reg)
    c.request("GET", f"/v2/test/multi/manifests/{tag}", headers={"Accept": mt})
    r = c.getresponse(); body = r.read()
    return {"mediaType": mt, "digest": r.getheader("Docker-Content-Digest"), "size": len(body)}
other, host = head("other"), head("host")
other["platform"] = {"os": "linux", "architecture": other_arch}
host["platform"] = {"os": "linux", "architecture": host_arch}
idx = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                  "manifests": [other, host]}).encode()
c = http.client.HTTPConnection(reg)
c.request("PUT", "/v2/test/multi/manifests/idx", body=idx,
          headers={"Content-Type": "application/vnd.oci.image.index.v1+json"})
r = c.getresponse(); r.read()
sys.exit(0 if r.status == 201 else 1)
PY
[[ $RC == 0 ]] || { log "FAIL: pushing the index"; show_run; exit 1; }
run img pull "$REG/test/multi:idx"
if [[ $RC == 0 ]] && contains "$OUT" "$CONFIG"; then pass "(d) an index: the host's platform ($HOST_ARCH) taken"
else fail "(d) an index: the host's platform ($HOST_ARCH) taken"; fi

# (e) TLS with a CA of ours, htpasswd basic auth.
mkdir -p "$T/certs" "$T/certdir"
(
    cd "$T/certs"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=mini-test-ca
    openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >ext.cnf
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile ext.cnf
) >"$T/openssl.log" 2>&1 || { cat "$T/openssl.log"; log "FAIL: openssl"; exit 1; }
cp "$T/certs/ca.crt" "$T/certdir/"
python3 -W ignore -c 'import crypt; print("tester:" + crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))' \
    >"$T/htpasswd" 2>/dev/null
if ! grep -q '^tester:\$2' "$T/htpasswd"; then
    skip "(e) TLS and basic auth" "no bcrypt (Python's crypt module) for the htpasswd file"
else
    TPORT=$(free_port)
    start_registry tls "$TPORT" "  tls:
    certificate: $T/certs/server.crt
    key: $T/certs/server.key
auth:
  htpasswd:
    realm: mini-test
    path: $T/htpasswd"
    TREG=127.0.0.1:$TPORT
    skopeo copy -q --dest-cert-dir "$T/certdir" --dest-creds tester:s3cret "oci:$T/bb:test" "docker://$TREG/test/img:tag" \
        >"$T/skopeo.log" 2>&1 || { cat "$T/skopeo.log"; log "FAIL: skopeo push (TLS)"; exit 1; }
    run img pull --creds tester:s3cret "$TREG/test/img:tag"
    if [[ $RC == 1 ]] && contains "$ERR" "certificate"; then pass "(e) an unknown CA is refused"
    else fail "(e) an unknown CA is refused"; fi
    run img pull --cert-dir "$T/certdir" "$TREG/test/img:tag"
    if [[ $RC == 1 ]] && contains "$ERR" "requires a user and password"; then pass "(e) no credentials: a clear error"
    else fail "(e) no credentials: a clear error"; fi
    run img pull --cert-dir "$T/certdir" --creds tester:wrong "$TREG/test/img:tag"
    if [[ $RC == 1 ]] && contains "$ERR" "refused with the credentials from --creds" && ! contains "$ERR" wrong; then
        pass "(e) wrong credentials: a clear error, the password not shown"
    else fail "(e) wrong credentials: a clear error, the password not shown"; fi
    run img pull --cert-dir "$T/certdir" --creds tester:s3cret "$TREG/test/img:tag"
    if [[ $RC == 0 ]] && contains "$OUT" "$CONFIG" && ! contains "$OUT$ERR" s3cret; then
        pass "(e) TLS with --cert-dir and --creds"
    else fail "(e) TLS with --cert-dir and --creds"; fi
    printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$TREG" "$(printf tester:s3cret | base64)" >"$T/auth.json"
    img rm "$TREG/test/img:tag" >/dev/null
    run env REGISTRY_AUTH_FILE="$T/auth.json" "$MINI_BIN/mini-sandbox" image pull --cert-dir "$T/certdir" "$TREG/test/img:tag"
    if [[ $RC == 0 ]] && contains "$OUT" "$TREG/test/img:tag"; then pass "(e) credentials from \$REGISTRY_AUTH_FILE"
    else fail "(e) credentials from \$REGISTRY_AUTH_FILE"; fi
fi

# (f) Bearer: a challenge, an anonymous token; blobs redirected to another
# host, which must get no Authorization (the proxy's "cdn" refuses one).
start_proxy bearer "$PORT"
run env MINI_IMAGE_STORE="$T/store-f" "$MINI_BIN/mini-sandbox" image pull "127.0.0.1:$PROXY_PORT/test/img:tag"
if [[ $RC == 0 ]] && (($(requests '"path": "/token') >= 1)) && (($(requests '"server": "cdn"') >= 1)) &&
    [[ $(requests '"server": "cdn".*"token": true') == 0 && $(requests '"server": "cdn".*"auth": "[A-Za-z]') == 0 ]] &&
    (($(requests '"server": "reg", "method": "GET", "path": "/v2/test/img/manifests/tag", "range": "", "auth": "Bearer", "token": true') == 1)); then
    pass "(f) the Bearer token flow; the token never reaches the blob host"
else fail "(f) the Bearer token flow" "$(cat "$PROXY_LOG")"; fi
stop_proxy

# (g) one blob tampered with: refused, named; nothing left in tmp/ or
# layers/ (a store of its own, so that no layer is shared).
start_proxy tamper "$PORT"
run env MINI_IMAGE_STORE="$T/store-g" "$MINI_BIN/mini-sandbox" image pull "127.0.0.1:$PROXY_PORT/test/img:tag"
left=$(ls -A "$T/store-g/tmp" "$T/store-g/layers" "$T/store-g/images" 2>/dev/null | grep -vc ':$\|^$' || true)
if [[ $RC == 1 ]] && contains "$ERR" "digest mismatch" && contains "$ERR" "layer sha256:" && [[ $left == 0 ]]; then
    pass "(g) a tampered blob: the pull fails naming it, nothing is left"
else fail "(g) a tampered blob" "entries left: $left"; fi
stop_proxy

# (h) a transfer cut mid-blob: the pull resumes it with a Range request.
start_proxy cut "$PORT"
run env MINI_IMAGE_STORE="$T/store-h" "$MINI_BIN/mini-sandbox" image pull "127.0.0.1:$PROXY_PORT/test/img:tag"
ranged=$(grep -c '"range": "bytes=[1-9][0-9]*-"' "$PROXY_LOG" || true)
if [[ $RC == 0 ]] && contains "$OUT" "$CONFIG" && ((ranged == 1)) && [[ -z $(ls -A "$T/store-h/tmp") ]]; then
    pass "(h) a cut transfer is resumed with a Range request"
else fail "(h) a cut transfer is resumed with a Range request" "$(cat "$PROXY_LOG")"; fi
stop_proxy

# (h) what an earlier pull left (a partial file under tmp/, named by the
# blob's digest) is resumed from where it ends, and hashed whole.
BIG=$(curl -s -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$REG/v2/test/img/manifests/tag" |
    python3 -c 'import json,sys; print(max(json.load(sys.stdin)["layers"], key=lambda l: l["size"])["digest"])')
mkdir -p -m 0700 "$T/store-h2" "$T/store-h2/tmp"
curl -s -r 0-999 "http://$REG/v2/test/img/blobs/$BIG" >"$T/store-h2/tmp/blob-${BIG#sha256:}"
start_proxy plain "$PORT"
run env MINI_IMAGE_STORE="$T/store-h2" "$MINI_BIN/mini-sandbox" image pull "127.0.0.1:$PROXY_PORT/test/img:tag"
if [[ $RC == 0 ]] && [[ $(requests '"range": "bytes=1000-"') == 1 ]] && [[ -z $(ls -A "$T/store-h2/tmp") ]]; then
    pass "(h) a partial file left by an earlier pull is resumed"
else fail "(h) a partial file left by an earlier pull is resumed" "$(cat "$PROXY_LOG")"; fi
stop_proxy

# A mirror for docker.io ($MINI_REGISTRY_MIRRORS): tried first, a dead one
# skipped; the image keeps its docker.io name.
run env MINI_IMAGE_STORE="$T/store-m" MINI_REGISTRY_MIRRORS="docker.io=127.0.0.1:1,docker.io=$REG" \
    "$MINI_BIN/mini-sandbox" image pull test/img:tag
if [[ $RC == 0 ]] && contains "$OUT" "docker.io/test/img:tag $CONFIG" && contains "$ERR" "mirror 127.0.0.1:1"; then
    pass "a registry mirror from \$MINI_REGISTRY_MIRRORS, a dead one skipped"
else fail "a registry mirror from \$MINI_REGISTRY_MIRRORS"; fi

# Name normalisation: an image pulled as docker.io/library/NAME is found
# as NAME (the registry is not reached: the name is set by hand here).
run python3 - "$STORE" "$CONFIG" <<'PY'
import json, sys
p = sys.argv[1] + "/refs.json"
refs = json.load(open(p))
refs["docker.io/library/bbtest:1"] = sys.argv[2]
json.dump(refs, open(p, "w"))
PY
expect_out "a short name finds docker.io/library/NAME" "$CONFIG" img inspect bbtest:1
expect_out "and docker.io/NAME too" "$CONFIG" img inspect docker.io/bbtest:1
run img pull "Not/A/Valid"
if [[ $RC == 1 ]] && contains "$ERR" "not a valid"; then pass "a malformed reference: refused"
else fail "a malformed reference: refused"; fi

finish

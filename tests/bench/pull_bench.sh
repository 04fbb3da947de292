#!/bin/bash
# Benchmark of image pull (label bench): an image of about
# $BENCH_PULL_MB MB (default 150; five gzip layers of incompressible data)
# pushed to Debian's docker-registry on loopback, then pulled by
# `mini-sandbox image pull` (fetch, verify, extract into the store) and
# copied by `skopeo copy docker://... oci:DIR` (fetch and write, no
# extraction), each $BENCH_PULL_RUNS times (default 3) into an empty
# store / directory; then a pull of the image already stored.  Prints the
# median times and their ratio, and the pull's peak resident memory
# (/usr/bin/time); no pass/fail threshold.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
have docker-registry || skip_all "docker-registry is not installed (scripts/install-deps.sh --test)"
have skopeo || skip_all "skopeo is not installed (scripts/install-deps.sh --test)"
have python3 || skip_all "python3 is not installed"
[[ -x /usr/bin/time ]] || skip_all "/usr/bin/time is not installed (Debian package time)"
MB=${BENCH_PULL_MB:-150}
RUNS=${BENCH_PULL_RUNS:-3}

. "$MINI_SOURCE_DIR/tests/image/image_lib.sh"   # free_port, start_registry
PORT=$(free_port)
start_registry reg "$PORT"

# The image: an OCI layout of five layers, each a tar of one file of
# random bytes (gzip -1).
python3 - "$T/img" "$MB" <<'PY'
import gzip, hashlib, io, json, os, sys, tarfile
out, mb = sys.argv[1], int(sys.argv[2])
os.makedirs(out + "/blobs/sha256")
def blob(data):
    d = hashlib.sha256(data).hexdigest()
    open(f"{out}/blobs/sha256/{d}", "wb").write(data)
    return "sha256:" + d, len(data)
layers, diffs = [], []
per = mb * 1024 * 1024 // 5
for i in range(5):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        ti = tarfile.TarInfo(f"data/layer{i}.bin"); ti.size = per; ti.mtime = 1700000000
        t.addfile(ti, io.BytesIO(os.urandom(per)))
    raw = buf.getvalue()
    diffs.append("sha256:" + hashlib.sha256(raw).hexdigest())
    d, n = blob(gzip.compress(raw, compresslevel=1, mtime=0))
    layers.append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": d, "size": n})
cfg = json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                  "rootfs": {"type": "layers", "diff_ids": diffs}}).encode()
cd, cn = blob(cfg)
man = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                  "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": cn},
                  "layers": layers}).encode()
md, mn = blob(man)
json.dump({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
           "digest": md, "size": mn, "annotations": {"org.opencontainers.image.ref.name": "big"}}]},
          open(out + "/index.json", "w"))
open(out + "/oci-layout", "w").write('{"imageLayoutVersion":"1.0.0"}')
PY
REF=127.0.0.1:$PORT/bench/big:latest
skopeo copy -q --dest-tls-verify=false "oci:$T/img:big" "docker://$REF" >"$T/skopeo.log" 2>&1 ||
    { cat "$T/skopeo.log"; exit 1; }
SIZE=$(du -sm "$T/img" | cut -f1)

secs() { python3 -c "import sys; print('%.2f' % ((int(sys.argv[2]) - int(sys.argv[1])) / 1000))" "$@"; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
P=() S=() R=()
for ((i = 0; i < RUNS; i++)); do
    rm -rf "$T/store" "$T/oci"
    t0=$(now_ms)
    MINI_IMAGE_STORE=$T/store /usr/bin/time -f %M -o "$T/rss.$i" "$MINI_BIN/mini-sandbox" image pull -q "$REF" >/dev/null ||
        { log "FAIL: pull"; exit 1; }
    t1=$(now_ms)
    R+=("$(tail -n 1 "$T/rss.$i")")
    skopeo copy -q --src-tls-verify=false "docker://$REF" "oci:$T/oci:big" >/dev/null 2>&1 || { log "FAIL: skopeo"; exit 1; }
    t2=$(now_ms)
    P+=("$(secs "$t0" "$t1")") S+=("$(secs "$t1" "$t2")")
done
t0=$(now_ms)
MINI_IMAGE_STORE=$T/store "$MINI_BIN/mini-sandbox" image pull -q "$REF" >/dev/null
t1=$(now_ms)
p=$(median "${P[@]}") s=$(median "${S[@]}")
log "image of $SIZE MB (5 layers), registry on loopback, $RUNS runs each (median):"
log "  mini-sandbox image pull (fetch, verify, extract):  $p s   [${P[*]}]"
log "  skopeo copy docker:// oci: (fetch, write):         $s s   [${S[*]}]"
log "  ratio pull/skopeo:                                 $(python3 -c "print('%.2f' % ($p / $s))")"
log "  pull again (stored already):                       $(secs "$t0" "$t1") s"
log "  pull's peak resident memory:                       $(( $(printf '%s\n' "${R[@]}" | sort -n | tail -n 1) / 1024 )) MiB (of a $SIZE MB image: streamed)"
rm -rf "$T/store" "$T/oci" "$T/img" "$T/reg"
exit 0

# tests/image/image_lib.sh: helpers of the image tests (source after lib.sh
# and mini_test_init).
MKIMAGE="$MINI_SOURCE_DIR/tests/image/mkimage.py"
export MINI_IMAGE_STORE=$T/store
STORE=$MINI_IMAGE_STORE

img() { bounded "$MINI_BIN/mini-sandbox" image "$@" </dev/null; }

# expect_import_fails NAME WANT-IN-STDERR SRC [OPTION...]: the import
# exits 1, says WANT, and leaves no image and nothing in tmp/.
expect_import_fails() {
    local name=$1 want=$2
    shift 2
    run img import "$@"
    local left
    left=$(ls -A "$STORE/tmp" 2>/dev/null | wc -l)
    if [[ $RC == 1 ]] && contains "$ERR" "$want" && [[ $left == 0 ]]; then pass "$name"
    else fail "$name" "expected status 1, stderr containing: $want, nothing left in tmp/ ($left)"; fi
}

# The one image's root (the newest when several).
image_root() {
    local id
    id=$("$MINI_BIN/mini-sandbox" image inspect --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["rootfs"])')
    printf '%s' "$id"
}

# Registries on loopback (tests/image/pull.sh, run_pull.sh): Debian's
# docker-registry, offline.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_registry NAME PORT [EXTRA-YAML]: docker-registry on 127.0.0.1:PORT,
# storage in $T/NAME; its pid in REG_PIDS.
REG_PIDS=()
start_registry() {
    local name=$1 port=$2 extra=${3:-}
    mkdir -p "$T/$name"
    cat >"$T/$name.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $T/$name/data
http:
  addr: 127.0.0.1:$port
$extra
EOF
    docker-registry serve "$T/$name.yml" >"$T/$name.log" 2>&1 &
    local pid=$!
    REG_PIDS+=("$pid")
    BG_PIDS+=("$pid")
    cleanup_cmd "kill $pid"
    local scheme=http curlopt=()
    [[ -n $extra ]] && scheme=https curlopt=(--cacert "$T/certs/ca.crt")
    wait_until 20 curl -s -o /dev/null "${curlopt[@]}" "$scheme://127.0.0.1:$port/v2/" ||
        { log "FAIL: docker-registry $name did not start"; cat "$T/$name.log"; exit 1; }
}


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

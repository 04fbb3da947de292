#!/bin/bash
# run --image REF --pull=missing|always|never (docs/images.md): a missing
# image is pulled from its registry (Debian's docker-registry on loopback,
# pushed to with skopeo) through mini-sandbox-image, as `image pull`
# does, its output on stderr; a stored one is not asked for again;
# never refuses a missing image with a clear error.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
. "$(dirname "${BASH_SOURCE[0]}")/image_lib.sh"
is_root || skip_all "needs root (the registry and the daemon's sandboxes as root)"
have docker-registry || skip_all "docker-registry is not installed (scripts/install-deps.sh --test)"
have skopeo || skip_all "skopeo is not installed (scripts/install-deps.sh --test)"
have python3 || skip_all "python3 is not installed"
[[ -x /bin/busybox ]] || skip_all "busybox-static is not installed"

python3 "$MKIMAGE" oci "$T/bb" >/dev/null
PORT=$(free_port)
start_registry reg "$PORT"
REG=127.0.0.1:$PORT
skopeo copy -q --dest-tls-verify=false "oci:$T/bb:test" "docker://$REG/test/img:tag" >"$T/skopeo.log" 2>&1 ||
    { cat "$T/skopeo.log"; log "FAIL: skopeo push"; exit 1; }
start_daemon

expect_refused "--pull=never: a missing image is refused" sbx --pull=never --image "$REG/test/img:tag" -- echo SHOULD-NOT-RUN
check "--pull=never: the error says so" contains "$ERR" "no such image in the store, and --pull=never"
check "--pull=never: nothing was pulled" test -z "$(ls -A "$STORE/images" 2>/dev/null)"
expect_refused "--pull=bogus is a usage error" sbx --pull=bogus --image "$REG/test/img:tag" -- echo SHOULD-NOT-RUN

expect_eq "a missing image is pulled (default --pull=missing), then run; stdout is the command's" \
    "hello from layer 2" sbx --image "$REG/test/img:tag" -- cat /etc/motd
check "the pull's output went to stderr" contains "$ERR" "$REG/test/img:tag sha256:"
expect_out "image ls shows the pulled image" "$REG/test/img:tag" img ls
expect_eq "standard input still goes to the command" "piped" \
    env SBX_STDIN=keep bash -c 'echo piped | "$0" run --socket "$1" --workspace "$2" --image "$3" -- cat' \
    "$MINI_BIN/mini-sandbox" "$SOCK" "$WS" "$REG/test/img:tag"

# The registry gone: a stored image needs no registry (missing, never);
# always must reach it.
kill "${REG_PIDS[0]}"
wait "${REG_PIDS[0]}" 2>/dev/null || true
expect_eq "--pull=missing with the image stored asks no registry" "hello from layer 2" \
    sbx --image "$REG/test/img:tag" -- cat /etc/motd
expect_eq "--pull=never with the image stored" "hello from layer 2" \
    sbx --pull=never --image "$REG/test/img:tag" -- cat /etc/motd
expect_refused "--pull=always with the registry gone fails" sbx --pull=always --image "$REG/test/img:tag" -- \
    echo SHOULD-NOT-RUN
check "--pull=always: the error says the pull failed" contains "$ERR" "pulling it failed"

# always, with a registry again (another port: a new name), pulls.
PORT2=$(free_port)
start_registry reg2 "$PORT2"
skopeo copy -q --dest-tls-verify=false "oci:$T/bb:test" "docker://127.0.0.1:$PORT2/test/img:tag" >"$T/skopeo.log" 2>&1
img rm "$REG/test/img:tag" >/dev/null
expect_eq "--pull=always pulls" "hello from layer 2" \
    sbx --pull=always --image "127.0.0.1:$PORT2/test/img:tag" -- cat /etc/motd
check "--pull=always: the pull ran (up to date or fetched)" contains "$ERR" "127.0.0.1:$PORT2/test/img:tag sha256:"

finish

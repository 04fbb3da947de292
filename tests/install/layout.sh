#!/bin/bash
# The install (docs/install.md): `cmake --install` into a temp root, the
# GNUInstallDirs layout, then the tree moved elsewhere and used from there
# only: mini-sandbox check, run --profile strict, the demo, the shell
# completions (bash and fish, run for real; zsh parsed).  No absolute
# source path in the installed programs.  As root and rootless.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
PREFIX=/opt/mini-test
# cmake --install writes install_manifest.txt into the build tree, which
# the unprivileged user of the rootless run cannot: root installs first and
# hands the tree over.
if [[ ${MINI_TEST_ROOTLESS:-0} == 1 && $(id -u) == 0 ]]; then
    pre=$(mktemp -d /tmp/mini-install.XXXXXX)
    trap 'rm -rf "$pre"' EXIT
    chmod 0755 "$pre"
    if DESTDIR="$pre/dest" cmake --install "$MINI_BUILD_DIR" --prefix "$PREFIX" >"$pre/install.log" 2>&1; then
        chown -R "${MINI_TEST_UID:-65534}:${MINI_TEST_GID:-65534}" "$pre/dest"
        export MINI_TEST_PREINSTALLED=$pre/dest
    fi
fi
mini_test_init "$@"
if [[ -n ${MINI_TEST_PREINSTALLED:-} ]]; then
    run cp -a "$MINI_TEST_PREINSTALLED" "$T/dest"
else
    run env DESTDIR="$T/dest" cmake --install "$MINI_BUILD_DIR" --prefix "$PREFIX"
fi
if [[ $RC != 0 ]]; then
    fail "cmake --install into a temp root"
    finish
fi
pass "cmake --install into a temp root"
R=$T/dest$PREFIX

expect_eq "bin/ holds the three programs only" "mini mini-sandbox mini-sandboxd" \
    bash -c 'cd "$0/bin" && echo $(ls)' "$R"
check "mini-sandbox-init is in libexec/mini/" test -x "$R/libexec/mini/mini-sandbox-init"
check "mini-sandbox-image (mini-sandbox image) is in libexec/mini/" test -x "$R/libexec/mini/mini-sandbox-image"
check "mini-sandbox-policy (run --policy) is in libexec/mini/" test -x "$R/libexec/mini/mini-sandbox-policy"
run ldd "$R/bin/mini-sandbox"
if [[ $RC == 0 ]] && ! contains "$OUT" libarchive && ! contains "$OUT" libcrypto; then
    pass "mini-sandbox does not load the import's libraries (libarchive, libcrypto)"
else
    fail "mini-sandbox does not load the import's libraries (libarchive, libcrypto)"
fi
if [[ $RC == 0 ]] && ! contains "$OUT" libpcre2 && ! contains "$OUT" libyaml; then
    pass "mini-sandbox does not load the policy's libraries (PCRE2, libyaml)"
else
    fail "mini-sandbox does not load the policy's libraries (PCRE2, libyaml)" "$OUT"
fi
expect_eq "share/mini/profiles: the built-in profiles" "permissive.json standard.json strict.json" \
    bash -c 'cd "$0/share/mini/profiles" && echo $(ls)' "$R"
check "share/mini/configs: the built-in configs" test -f "$R/share/mini/configs/mini.yaml"
check "share/doc/mini: README, copyright (the licence), the docs" \
    test -f "$R/share/doc/mini/README.md" -a -f "$R/share/doc/mini/copyright" -a -f "$R/share/doc/mini/isolation.md"
if command -v scdoc >/dev/null; then
    for page in man1/mini.1 man1/mini-sandbox.1 man8/mini-sandboxd.8 man5/mini-profiles.5; do
        expect_out "man page $page renders" "NAME" bash -c 'gzip -dc "$0" | man -l - 2>/dev/null | col -b' "$R/share/man/$page.gz"
    done
else
    skip "man pages" "scdoc is not installed (scripts/install-deps.sh --build)"
fi
check "completions: bash, zsh, fish" test -f "$R/share/bash-completion/completions/mini-sandbox" \
    -a -f "$R/share/zsh/site-functions/_mini" -a -f "$R/share/fish/vendor_completions.d/mini-sandbox.fish"
expect_out "units: ExecStart= names this install's daemon" "ExecStart=$PREFIX/bin/mini-sandboxd --foreground" \
    cat "$R/lib/systemd/user/mini-sandboxd.service" "$R/lib/systemd/system/mini-sandboxd.service"
check "units: the sockets" test -f "$R/lib/systemd/user/mini-sandboxd.socket" -a -f "$R/lib/systemd/system/mini-sandboxd.socket"
expect_out "AppArmor profile: attached to this install's daemon" "profile mini-sandboxd $PREFIX/bin/mini-sandboxd" \
    cat "$R/share/mini/apparmor/mini-sandboxd"
if grep -q '^CMAKE_BUILD_TYPE:STRING=Debug$' "$MINI_BUILD_DIR/CMakeCache.txt"; then
    skip "no source path in the programs" "a Debug build keeps them for debuggers"
else
    run grep -l -F "$MINI_SOURCE_DIR" "$R/bin/mini" "$R/bin/mini-sandbox" "$R/bin/mini-sandboxd" \
        "$R/libexec/mini/mini-sandbox-init" "$R/libexec/mini/mini-sandbox-image" "$R/libexec/mini/mini-sandbox-policy"
    if [[ $RC == 1 ]]; then pass "no source path in the programs"; else fail "no source path in the programs" "in: $OUT"; fi
fi

# Moved: everything is found relative to the programs.
M=$T/moved
mv "$R" "$M"
chmod 0755 "$T/dest" "$M"
clean=(env -u MINI_PROFILE_DIR -u MINI_CONFIG_DIR -u MINI_SANDBOX_INIT -u MINI_SANDBOXD -u MINI_BIN
       HOME="$T" XDG_RUNTIME_DIR="$T/xdg" MSWEA_GLOBAL_CONFIG_DIR="$T/cfg" TMPDIR="$T")
mkdir -m 0700 "$T/xdg"
expect_out "moved: mini-sandboxd's default profiles are the moved ones" "default: $M/share/mini/profiles" \
    "${clean[@]}" "$M/bin/mini-sandboxd" --help
expect_eq "moved: mini-sandbox profiles lists them" "permissive standard strict" \
    bash -c '"$@" | cut -d" " -f1 | tr "\n" " " | sed "s/ $//"' _ "${clean[@]}" "$M/bin/mini-sandbox" profiles
expect_out "moved: mini-sandbox image runs the moved mini-sandbox-image" "NAME" \
    "${clean[@]}" MINI_IMAGE_STORE="$T/images" "$M/bin/mini-sandbox" image ls
run "${clean[@]}" "$M/bin/mini-sandbox" check --profile strict
if [[ $RC == 0 || $RC == 1 ]] && contains "$OUT" "strict"; then
    pass "moved: mini-sandbox check assesses strict (status $RC)"
else
    fail "moved: mini-sandbox check assesses strict"
fi
expect_eq "moved: run --profile strict -- true (a private daemon and init from the moved tree)" "ran" \
    bounded "${clean[@]}" "$M/bin/mini-sandbox" run --profile strict --workspace "$WS" -- 'true && echo ran'
printf '{"policy": {"default": "deny", "rules": [{"match": "^true ", "verdict": "allow"}]}}' >"$T/policy.json"
expect_eq "moved: run --policy asks the moved mini-sandbox-policy" "ran" \
    bounded "${clean[@]}" "$M/bin/mini-sandbox" run --policy "$T/policy.json" --profile strict --workspace "$WS" \
    -- 'true && echo ran'
mv "$M/libexec/mini/mini-sandbox-policy" "$T/policy-helper"
run bounded "${clean[@]}" "$M/bin/mini-sandbox" run --policy "$T/policy.json" --profile strict --workspace "$WS" \
    -- "true && touch $WS/no-helper"
if [[ $RC == 125 && $ERR == *"mini-sandbox-policy"* && ! -e $WS/no-helper ]]; then
    pass "run --policy without its helper: 125, the helper named, nothing run"
else
    fail "run --policy without its helper: 125, the helper named, nothing run" "rc $RC: $ERR"
fi
mv "$T/policy-helper" "$M/libexec/mini/mini-sandbox-policy"
run bounded "${clean[@]}" "$M/share/mini/demo/run.sh"
if [[ $RC == 0 ]] && contains "$OUT" "Ran 3 tests" && contains "$OUT" "OK"; then
    pass "moved: the demo (mini fixes the test under strict, replayed)"
else
    fail "moved: the demo (mini fixes the test under strict, replayed)"
fi

# Completions, from the moved tree, with its programs on PATH.
export PATH="$M/bin:$PATH"
bash_complete() {   # WORDS...: what the bash completion offers for the last word
    env -u MINI_PROFILE_DIR -u MINI_CONFIG_DIR bash -c '
        source "$0"
        COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 ))
        "$(complete -p "$1" | sed "s/.*-F \([^ ]*\) .*/\1/")"
        printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " " | sed "s/ $//"' \
        "$M/share/bash-completion/completions/$1" "$@"
}
expect_eq "bash: mini-sandbox <TAB>" "--help --version bench check image ping profiles run stats" \
    bash_complete mini-sandbox ""
expect_eq "bash: mini-sandbox run --profile s<TAB>: the installed profiles" "standard strict" \
    bash_complete mini-sandbox run --profile s
expect_eq "bash: mini --sandbox <TAB>" "off permissive standard strict" bash_complete mini --sandbox ""
expect_eq "bash: mini -c mini<TAB>: the installed configs" "mini mini_textbased" bash_complete mini -c mini
expect_eq "bash: mini-sandboxd --log-level <TAB>" "debug error info warn" bash_complete mini-sandboxd --log-level ""
if have fish; then
    fish_complete() {
        env -u MINI_PROFILE_DIR -u MINI_CONFIG_DIR HOME="$T" XDG_CONFIG_HOME="$T/cfg" XDG_DATA_HOME="$T/data" \
            fish --no-config -c "source '$M/share/fish/vendor_completions.d/$1.fish'; complete -C '$2'" |
            cut -f1 | sort | tr '\n' ' ' | sed 's/ $//'
    }
    expect_eq "fish: mini-sandbox run --profile <TAB>" "permissive standard strict" \
        fish_complete mini-sandbox "mini-sandbox run --profile "
    expect_eq "fish: mini --sandbox <TAB>" "off permissive standard strict" fish_complete mini "mini --sandbox "
else
    skip "fish completion" "fish is not installed"
fi
if have zsh; then
    expect_rc "zsh: the completion parses" 0 zsh -n "$M/share/zsh/site-functions/_mini"
else
    skip "zsh completion" "zsh is not installed"
fi
finish

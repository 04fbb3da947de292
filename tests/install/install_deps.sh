#!/bin/bash
# scripts/install-deps.sh: checks before it installs, runs without root
# when nothing is missing, lists build and test packages apart (--build,
# --test), and as a non-root user with something missing says what and how
# and installs nothing.  dpkg-query, apt-get and sudo are stand-ins on PATH
# (tests/install/fakebin made here), so nothing is installed for real.
set -uo pipefail
SRC=${MINI_SOURCE_DIR:?}
SCRIPT=$SRC/scripts/install-deps.sh
T=$(mktemp -d /tmp/mini-deps.XXXXXX)
chmod 0755 "$T"
trap 'rm -rf "$T"' EXIT
failed=0 passed=0
ok() { echo "ok   - $1"; passed=$((passed + 1)); }
bad() { echo "FAIL - $1"; shift; printf '    | %s\n' "$@"; failed=$((failed + 1)); }
AS=()
if [[ $(id -u) == 0 ]]; then AS=(setpriv --reuid=65534 --regid=65534 --clear-groups); fi

# fake MISSING...: a PATH where dpkg-query reports MISSING (or "all") as not
# installed, apt-get records its calls, sudo refuses.
fake() {
    local dir=$T/fake-$RANDOM
    mkdir -p "$dir"
    printf '%s\n' "$@" >"$dir/missing"
    cat >"$dir/dpkg-query" <<EOS
#!/bin/sh
pkg=\$(eval echo \\\${\$#})
if grep -qx all "$dir/missing" || grep -qx "\$pkg" "$dir/missing"; then exit 1; fi
printf 'install ok installed'
EOS
    printf '#!/bin/sh\necho "apt-get $*" >>%s/apt.log\n' "$dir" >"$dir/apt-get"
    printf '#!/bin/sh\nexit 1\n' >"$dir/sudo"
    chmod 0755 "$dir"/*
    chmod 0777 "$dir"
    echo "$dir"
}
# deps DIR ARGS...: run install-deps.sh as the unprivileged user with DIR first on PATH.
deps() {
    local dir=$1
    shift
    RC=0
    OUT=$("${AS[@]}" env PATH="$dir:/usr/sbin:/usr/bin:/sbin:/bin" sh "$SCRIPT" "$@" 2>&1) || RC=$?
}

# The real machine: CI installed everything (it ran the script as root).
RC=0
OUT=$("${AS[@]}" sh "$SCRIPT" 2>&1) || RC=$?
if [[ $RC == 0 && $OUT == *"all packages present"* ]]; then ok "as uid $("${AS[@]}" id -u): nothing missing, exit 0"
elif [[ $RC == 1 && $OUT == *"missing:"* ]]; then echo "skip - this machine lacks packages (${OUT%%$'\n'*})"
else bad "as a normal user: nothing missing, exit 0" "status $RC" "$OUT"; fi

d=$(fake tmux)
deps "$d"
if [[ $RC == 1 && $OUT == *"missing: tmux"* && $OUT == *"sudo apt-get install -y --no-install-recommends tmux"* && ! -e $d/apt.log ]]; then
    ok "one missing, not root: names it, prints the command, installs nothing, exit 1"
else bad "one missing, not root: names it, prints the command, installs nothing, exit 1" "status $RC" "$OUT"; fi

deps "$d" --build
if [[ $RC == 0 ]]; then ok "--build: a test package missing does not matter"
else bad "--build: a test package missing does not matter" "status $RC" "$OUT"; fi

d=$(fake all)
deps "$d" --build --check
if [[ $RC == 1 && $OUT == *cmake* && $OUT == *libseccomp-dev* && $OUT != *tmux* && $OUT != *clang* ]]; then
    ok "--build lists build packages only"
else bad "--build lists build packages only" "$OUT"; fi
deps "$d" --test --check
if [[ $RC == 1 && $OUT == *tmux* && $OUT == *clang* && $OUT != *libseccomp-dev* && $OUT != *" cmake"* ]]; then
    ok "--test lists test packages only"
else bad "--test lists test packages only" "$OUT"; fi
deps "$d" --check
if [[ $RC == 1 && $OUT == *libseccomp-dev* && $OUT == *tmux* && ! -e $d/apt.log ]]; then
    ok "no option: both lists (what CI needs); --check installs nothing"
else bad "no option: both lists; --check installs nothing" "$OUT"; fi

deps "$d" --bogus
if [[ $RC == 2 && $OUT == *"unknown option --bogus"* ]]; then ok "an unknown option: exit 2"
else bad "an unknown option: exit 2" "status $RC" "$OUT"; fi

# As root with something missing: apt-get is called with just that.
if [[ $(id -u) == 0 ]]; then
    d=$(fake tmux)
    RC=0
    OUT=$(env PATH="$d:/usr/sbin:/usr/bin:/sbin:/bin" sh "$SCRIPT" 2>&1) || RC=$?
    if [[ $RC == 0 ]] && grep -q 'install -y -qq --no-install-recommends tmux$' "$d/apt.log"; then
        ok "root, one missing: apt-get installs just that one"
    else bad "root, one missing: apt-get installs just that one" "status $RC" "$OUT" "$(cat "$d/apt.log" 2>/dev/null)"; fi
fi
echo "$passed passed, $failed failed"
exit $((failed > 0))

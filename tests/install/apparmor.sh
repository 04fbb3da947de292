#!/bin/bash
# The AppArmor profile (packaging/apparmor/mini-sandboxd.in, as written for
# the build tree) parses with apparmor_parser without loading it (-Q).
# AppArmor 4 (Ubuntu 24.04, Debian 13) knows the `userns` rule and parses
# the profile as shipped; AppArmor 3 (Debian 12) does not: then the profile
# is parsed without that rule, against ABI 3.0, and the rule itself is
# reported as not validated here.
set -uo pipefail
PROFILE=${MINI_BUILD_DIR:?}/share/mini/apparmor/mini-sandboxd
command -v apparmor_parser >/dev/null || { echo "skip: apparmor_parser is not installed (package apparmor)"; exit 77; }
failed=0
ok() { echo "ok   - $1"; }
bad() { echo "FAIL - $1"; shift; printf '    %s\n' "$@"; failed=$((failed + 1)); }

for prog in mini-sandboxd mini-sandbox; do
    if grep -q "^profile $prog $MINI_BUILD_DIR/bin/$prog flags=(unconfined) {" "$PROFILE" &&
        awk -v p="$prog" '$1 == "profile" && $2 == p { inp = 1 } inp && /^  userns,$/ { found = 1 } /^}/ { inp = 0 } END { exit !found }' "$PROFILE"; then
        ok "profile $prog: attached to the program, unconfined, grants userns"
    else
        bad "profile $prog: attached to the program, unconfined, grants userns" "$(cat "$PROFILE")"
    fi
done

version=$(apparmor_parser --version | sed -n '1s/.*version \([0-9]*\)\..*/\1/p')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ ${version:-0} -ge 4 ]]; then
    if out=$(apparmor_parser -Q -K "$PROFILE" 2>&1); then ok "apparmor_parser $version parses the profile"
    else bad "apparmor_parser $version parses the profile" "$out"; fi
else
    sed -e 's|^abi <abi/4.0>,|abi <abi/3.0>,|' -e '/^  userns,$/d' "$PROFILE" >"$tmp/mini-sandboxd"
    if out=$(apparmor_parser -Q -K "$tmp/mini-sandboxd" 2>&1); then
        ok "apparmor_parser $version parses the profile without the userns rule (ABI 3.0)"
    else
        bad "apparmor_parser $version parses the profile without the userns rule (ABI 3.0)" "$out"
    fi
    echo "skip - the userns rule itself: apparmor_parser $version predates it (AppArmor 4 parses it)"
fi
# A profile with a syntax error is rejected: the check above means something.
sed -e 's|flags=(unconfined) {|flags=(unconfined {|' "$PROFILE" >"$tmp/broken"
if apparmor_parser -Q -K "$tmp/broken" >/dev/null 2>&1; then bad "a broken copy is rejected"; else ok "a broken copy is rejected"; fi
echo "$([[ $failed == 0 ]] && echo 'all passed' || echo "$failed failed")"
exit $((failed > 0))

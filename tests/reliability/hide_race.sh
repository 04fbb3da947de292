#!/bin/bash
# A hidden file that the host replaces by rename while sandboxes are built,
# as passwd does with /etc/shadow: setting up its cover must not fail.  The
# load benchmark saw spawn_failed "hiding /etc/shadow: No such file or
# directory" when /etc/shadow was rewritten during a run; before the fix
# about a quarter of the commands here failed so.  A profile hides a file
# that a host loop keeps replacing, and 8 clients x 25 commands must all run.
#
# Known limit (docs/isolation.md, "Hidden files"): a file replaced after a
# sandbox was built is not covered in that sandbox.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
have python3 || skip_all "python3 is missing"

# Outside the test's 0700 temp dir, so that a root daemon's session uid
# can reach it.
R=$(mktemp -d /var/tmp/mini-hide.XXXXXX)
cleanup_path "$R"
chmod 0755 "$R"
echo "SECRET-$RUN_TAG" >"$R/secret"
P=$T/profiles
mkdir -p "$P"
cp "$MINI_SOURCE_DIR"/profiles/*.json "$P/"
python3 - "$P/strict.json" "$R" <<'PY'
import json, sys
path, r = sys.argv[1], sys.argv[2]
p = json.load(open(path))
p["filesystem"]["binds"].append(r)
p["filesystem"]["hide"].append(r + "/secret")
json.dump(p, open(path, "w"))
PY
# The host replaces the file by rename (cp and mv, as an admin would),
# while 8 clients run 25 commands each (tests/bench/load.py, which starts
# its own daemon with these profiles).
( end=$((SECONDS + 120)); while (( SECONDS < end )); do
      cp "$R/secret" "$R/secret.new" && mv -f "$R/secret.new" "$R/secret"; done ) &
BG_PIDS+=("$!")
run bounded python3 "$MINI_SOURCE_DIR/tests/bench/load.py" --bin "$MINI_BIN" --profiles "$P" --tmpdir "$T" 8x25
json=$(printf '%s\n' "$OUT" | grep '^{"bench"' | tail -n 1)
errors=$(printf '%s' "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["error"], d["ok"], d["sent"])' 2>/dev/null || echo "? ? ?")
read -r nerr nok nsent <<<"$errors"
if [[ $nerr == 0 && $nok == "$nsent" && $nsent == 200 ]]; then
    pass "a hidden file replaced by rename during set-up: all 200 sandboxes start"
else
    fail "a hidden file replaced by rename during set-up: all 200 sandboxes start" \
        "errors $nerr, ok $nok of $nsent; $(printf '%s\n' "$OUT" | grep -m 3 'error:')"
fi
finish

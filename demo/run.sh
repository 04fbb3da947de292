#!/bin/bash
# The demo: mini fixes a failing test in a small repository (calc/) under
# the strict sandbox, replaying a recorded model run (no API key needed).
# Runs from the source tree (scripts/demo.sh builds, then runs this with
# MINI_BIN=build/bin) and from an install (PREFIX/share/mini/demo/run.sh:
# the programs are in PREFIX/bin, else on PATH).
set -euo pipefail
demo=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ -z ${MINI_BIN:-} ]]; then
    if [[ -x $demo/../../../bin/mini-sandbox ]]; then
        MINI_BIN=$(cd "$demo/../../../bin" && pwd)
    else
        MINI_BIN=$(dirname "$(command -v mini-sandbox || echo /nonexistent/mini-sandbox)")
    fi
fi
for p in mini mini-sandbox; do
    [[ -x $MINI_BIN/$p ]] || { echo "demo: $p not found (set MINI_BIN to the directory of the programs)" >&2; exit 1; }
done

ws=$(mktemp -d "${TMPDIR:-/tmp}/mini-demo.XXXXXX")
cp -r "$demo/calc/." "$ws/"
if [[ $(id -u) == 0 ]]; then
    echo "== as root, the sandbox refuses root-owned workspaces: giving it to nobody (65534:65534)"
    chown -R 65534:65534 "$ws"
fi
echo "== demo workspace: $ws"

echo "== the test fails before (run in the strict sandbox):"
"$MINI_BIN/mini-sandbox" run --profile strict --workspace "$ws" -- python3 -m unittest -q test_calc || true

echo "== mini --sandbox strict, replaying the recorded run calc.traj.json (no API key needed):"
"$MINI_BIN/mini" --sandbox strict --workspace "$ws" -y --exit-immediately \
    -c mini_textbased --model-class replay -c "model.replay_path=$demo/calc.traj.json" \
    -t "$(cat "$demo/task.txt")" -o "$ws/.mini.traj.json"

echo "== the test after (in the strict sandbox again):"
"$MINI_BIN/mini-sandbox" run --profile strict --workspace "$ws" -- python3 -m unittest -v test_calc
echo "== trajectory of this run: $ws/.mini.traj.json"

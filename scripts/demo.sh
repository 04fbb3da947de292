#!/bin/bash
# Set up and run the bundled demo: install dependencies, build, copy the demo
# repository (a failing test) to a scratch workspace and work on it under the
# strict sandbox.  No API key is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
bin=$PWD/build/bin

ws=$(mktemp -d /tmp/mini-demo.XXXXXX)
cp -r demo/calc/. "$ws/"
if [[ $(id -u) == 0 ]]; then
    echo "== as root, the sandbox refuses root-owned workspaces: giving it to nobody (65534:65534)"
    chown -R 65534:65534 "$ws"
fi
echo "== demo workspace: $ws"

echo "== the test fails before (run in the strict sandbox):"
"$bin/mini-sandbox" run --profile strict --workspace "$ws" -- python3 -m unittest -q test_calc || true

echo "== mini --sandbox strict, replaying the recorded run demo/calc.traj.json (no API key needed):"
"$bin/mini" --sandbox strict --workspace "$ws" -y --exit-immediately \
    -c mini_textbased --model-class replay -c "model.replay_path=$PWD/demo/calc.traj.json" \
    -t "$(cat demo/task.txt)" -o "$ws/.mini.traj.json"

echo "== the test after (in the strict sandbox again):"
"$bin/mini-sandbox" run --profile strict --workspace "$ws" -- python3 -m unittest -v test_calc
echo "== trajectory of this run: $ws/.mini.traj.json"

#!/bin/bash
# Set up and run the bundled demo (demo/run.sh): install dependencies,
# build, then run it with the programs just built.  No API key is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
MINI_BIN=$PWD/build/bin exec demo/run.sh

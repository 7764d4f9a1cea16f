#!/usr/bin/env bash
# Installs dependencies, builds Runnel (Release, -j2) and runs every test.
# Exits non-zero on any failure. Usage: scripts/test.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}

bash scripts/install-deps.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j2
cd "$build"
# Tests run two at a time (2 cores); OMP_WAIT_POLICY keeps oneDNN's OpenMP
# threads from spinning against ours.
OMP_WAIT_POLICY=PASSIVE ctest --output-on-failure -j2 --timeout 600

#!/usr/bin/env bash
# Configures and builds into build/ (BUILD_DIR overrides).  Warnings are
# errors here, as in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DTT_WERROR=ON -DTT_TESTS=ON "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"

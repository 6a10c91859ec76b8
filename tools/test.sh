#!/usr/bin/env bash
# The test command: install what is missing, build with warnings as errors,
# and run every CUnit suite through CTest, one per core.  Works without a
# GPU (PoCL).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
tools/build.sh
build=${BUILD_DIR:-build}
cd "$build"
# one suite per core: most of a cold run is single-threaded kernel compiling
ctest --output-on-failure --timeout 600 -j"$(nproc)" "$@"

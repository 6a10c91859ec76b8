#!/usr/bin/env bash
# The test command: install what is missing, build with warnings as errors,
# and run every CUnit suite through CTest, one suite per core.  Works
# without a GPU (PoCL).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
tools/build.sh
build=${BUILD_DIR:-build}
cd "$build"
# CTest starts the longest suites first (their COST in tests/CMakeLists.txt,
# then its own timings of the last run), so that none starts last
ctest --output-on-failure --timeout 600 -j"$(nproc)" "$@"

#!/usr/bin/env bash
# The test command: install what is missing, build with warnings as errors,
# and run every CUnit suite through CTest.  Works without a GPU (PoCL).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
tools/build.sh
build=${BUILD_DIR:-build}
cd "$build"
ctest --output-on-failure --timeout 600 "$@"

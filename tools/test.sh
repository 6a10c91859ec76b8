#!/usr/bin/env bash
# The test command: install what is missing, build with warnings as errors,
# and run every CUnit suite through CTest.  Works without a GPU (PoCL).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
tools/build.sh
build=${BUILD_DIR:-build}
cd "$build"
# one suite at a time: the suites share one find-db (build/test-cache), and
# test_cli's `mem --measure` checks compare an estimate with a run that a
# concurrent suite's new picks can change in between
ctest --output-on-failure --timeout 600 "$@"

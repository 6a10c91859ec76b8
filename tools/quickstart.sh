#!/usr/bin/env bash
# The quick start: install what is missing, build, and run the main job on
# built-in defaults.  Until training lands, the main job is the device list
# and the smoke kernels (`tiletrain selftest`).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
tools/build.sh
build=${BUILD_DIR:-build}
"$build"/tiletrain devices
"$build"/tiletrain selftest

#!/usr/bin/env bash
# The Python package's tests: a virtual environment under build/ (made once,
# seeing the system's numpy, Pillow and PyTorch), `pip install ./python`
# into it (scikit-build-core builds the CMake project; build/python keeps
# the build for the next run), then pytest over python/tests against the
# command tools/build.sh built.  Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
case $build in /*) ;; *) build=$PWD/$build ;; esac
# Debian's python3 (tools/deps.sh installs its venv, numpy, Pillow and torch)
python=${PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3 )}
venv=$build/python-venv
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv --system-site-packages "$venv"
fi
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
start=$(date +%s)
"$venv/bin/pip" install --quiet ./python pytest
echo "tools/test_python.sh: pip install ./python took $(( $(date +%s) - start )) s"
export TILETRAIN_CLI=${TILETRAIN_CLI:-$build/tiletrain}
cd python/tests
"$venv/bin/python" -m pytest -q "$@"

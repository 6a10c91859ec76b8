#!/usr/bin/env bash
# Makes a Python virtual environment with onnxruntime and numpy for
# `tiletrain export --verify` and its test (tests/export/check.sh):
#   tools/venv.sh [DIR]      DIR defaults to build/venv
# Idempotent: an environment that already imports both is left alone.
# Exit 77 when PyPI cannot be reached (the test is then skipped), 1 on
# any other failure.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-build/venv}
py="$venv/bin/python3"
if [ -x "$py" ] && "$py" -c 'import onnxruntime, numpy' 2>/dev/null; then exit 0; fi
if [ ! -x "$py" ]; then
  python3 -m venv "$venv" || { echo "tools/venv.sh: python3 -m venv $venv failed (Debian: apt-get install python3-venv)" >&2; exit 1; }
fi
if ! "$py" -m pip install --quiet --disable-pip-version-check --retries 1 --timeout 20 onnxruntime numpy 2>"$venv/pip.log"; then
  if grep -qiE "connection|resolve|network|timed out|No matching distribution" "$venv/pip.log"; then
    echo "tools/venv.sh: PyPI is unreachable; onnxruntime not installed ($venv/pip.log)" >&2
    exit 77
  fi
  cat "$venv/pip.log" >&2
  exit 1
fi

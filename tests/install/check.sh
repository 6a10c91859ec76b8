#!/usr/bin/env bash
# Installs the build into a fresh prefix and uses it as a user would:
#   1. a CMake project with find_package(tiletrain) links and runs;
#   2. the same program compiled through pkg-config links and runs;
#   3. the installed command runs its smoke kernels.
# usage: tests/install/check.sh BUILD_DIR   (CTest runs it as test_install)
set -euo pipefail
build=$(cd "${1:?usage: check.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
echo "installed into $prefix"

cmake -S "$here" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
"$work/consumer/consumer"

libdir=$(dirname "$(find "$prefix" -name tiletrain.pc)")
export PKG_CONFIG_PATH=$libdir
cc -std=c11 -DKERNEL_DIR="\"$(pkg-config --variable=kerneldir tiletrain)\"" "$here/consumer.c" \
    $(pkg-config --cflags tiletrain) -o "$work/consumer_pc" $(pkg-config --libs --static tiletrain)
"$work/consumer_pc"

"$prefix/bin/tiletrain" selftest >/dev/null
echo "installed tiletrain: selftest passed"

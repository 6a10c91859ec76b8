#!/usr/bin/env bash
# The release bundle: tiletrain-VERSION-linux-x86_64.tar.gz, a folder that
# runs wherever it is unpacked on an x86-64 Linux with glibc 2.36 or newer
# and a GPU driver (or PoCL / lavapipe), with none of our Debian packages:
#   tiletrain        the binary (kernels and SPIR-V built in), run path $ORIGIN/lib
#   lib/             the shared libraries it needs: the OpenCL ICD loader,
#                    CLBlast, libtiff and its codecs, cJSON, inih, stb, protobuf-c
#                    (export) and the Vulkan loader (opened at run time)
#   gpu_check.sh     the device check for a GPU machine (tools/gpu_check.sh)
#   python/          the PyTorch peer it runs where torch is installed
#   README.md, BUNDLE.txt
# Not in it: glibc, libstdc++ and libgcc_s (the system's: a GPU driver that
# loads after us needs the system's libstdc++, at least as new as the one it
# was built against), the GPU drivers, and Open MPI (the bundle is built
# without it; mpirun needs tools/build.sh's build).
#   tools/bundle.sh [--out DIR] [--check]
#   --out DIR  where the tarball goes (default dist/)
#   --check    then unpack it into an empty folder and run it there with a
#              clean environment: ldd resolves everything but glibc,
#              libstdc++ and libgcc_s inside the bundle; `devices`,
#              `selftest` (each API present) and a 3-step `train` pass
#   BUILD_DIR=DIR (default build-bundle): its own build, Release, no tests,
#              no MPI
set -euo pipefail
cd "$(dirname "$0")/.."
out=dist check=0
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --out) out=$2; shift 2 ;;
    --check) check=1; shift ;;
    *) echo "bundle: unknown option $1 (see tools/bundle.sh --help)" >&2; exit 2 ;;
  esac
done
build=${BUILD_DIR:-build-bundle}
# the system's own: glibc's libraries, the C++ runtime, the kernel's vDSO
base='^(linux-vdso|ld-linux-x86-64|libc|libm|libpthread|libdl|librt|libresolv|libstdc\+\+|libgcc_s)\.so'

tools/deps.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTT_TESTS=OFF -DTT_MPI=OFF \
  -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN/lib' \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags >/dev/null
# DT_RPATH, not DT_RUNPATH: it also serves the libraries' own dependencies
# (libtiff's codecs) and what the binary opens at run time (the Vulkan loader)
cmake --build "$build" --target tiletrain -j"$(nproc)"
version=$("$build/tiletrain" --version | awk '{print $2}')
name=tiletrain-$version-linux-x86_64
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pkg=$stage/$name
mkdir -p "$pkg/lib"
cp "$build/tiletrain" "$pkg/"
strip --strip-unneeded "$pkg/tiletrain"

# copy_deps FILE: every library FILE needs, by its soname, but the base's
copy_deps() {
  ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r soname path; do
    [[ $soname =~ $base ]] && continue
    [ -e "$pkg/lib/$soname" ] && continue
    cp -L "$path" "$pkg/lib/$soname"
    chmod 644 "$pkg/lib/$soname"
  done
  if ldd "$1" | grep -q 'not found'; then
    echo "bundle: $1 needs a library this machine lacks:" >&2
    ldd "$1" | grep 'not found' >&2
    exit 1
  fi
}
copy_deps "$build/tiletrain"
vulkan=$(ldconfig -p | awk '$1 == "libvulkan.so.1" && /x86-64/ && !found {print $NF; found = 1}')
if [ -n "$vulkan" ]; then
  cp -L "$vulkan" "$pkg/lib/libvulkan.so.1"
  copy_deps "$vulkan"
else
  echo "bundle: no Vulkan loader on this machine; the bundle runs OpenCL only" >&2
fi
cp README.md "$pkg/"
cp tools/gpu_check.sh "$pkg/"
mkdir -p "$pkg/python"
cp python/*.py "$pkg/python/"
cat >"$pkg/BUNDLE.txt" <<EOF
tiletrain $version for x86-64 Linux (glibc 2.36 or newer).

  ./tiletrain devices          the OpenCL and Vulkan devices this machine has
  ./tiletrain selftest         smoke kernels on the default device, checked
  ./tiletrain train --data DIR --out RUN
  ./tiletrain doctor           does this device train a recipe? (--plan FILE)
  ./gpu_check.sh OUT           doctor, bench and mem on every GPU of both APIs,
                               PyTorch beside it where torch sees the GPU, as
                               JSON in OUT (a few minutes)

Runs from any folder: the libraries in lib/ are found through the binary's
run path. What it needs from the system: glibc, libstdc++, and a GPU driver
with its OpenCL ICD file (/etc/OpenCL/vendors) or Vulkan ICD manifest
(/usr/share/vulkan/icd.d); PoCL and Mesa's lavapipe run it on the CPU.
Data parallel training over mpirun needs a build from source
(tools/build.sh). README.md is the project's; its docs/ folder is in the
source tree.
EOF
mkdir -p "$out"
tarball=$out/$name.tar.gz
tar -C "$stage" -czf "$tarball" "$name"
bytes=$(stat -c %s "$tarball")
echo "bundle: $tarball ($((bytes / 1024)) KiB; $(ls "$pkg/lib" | wc -l) libraries)"
limit=$((40 * 1024 * 1024))
if [ "$bytes" -gt "$limit" ]; then
  echo "bundle: $tarball is $bytes bytes, more than the 40 MiB a release may take" >&2
  exit 1
fi
[ "$check" = 1 ] || exit 0

# --- the check: unpacked into an empty folder, a clean environment ---------
where=$(mktemp -d)
trap 'rm -rf "$stage" "$where"' EXIT
tar -C "$where" -xzf "$tarball"
dir=$where/$name
mkdir -p "$where/empty" "$where/home"
# PoCL's compiled kernels stay in this machine's cache (the driver's, not ours)
pocl_cache=${POCL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pocl}
run() {
  env -i HOME="$where/home" PATH=/usr/bin:/bin LD_LIBRARY_PATH="$where/empty" \
    TT_CACHE_DIR="$where/cache" POCL_CACHE_DIR="$pocl_cache" "$dir/tiletrain" "$@"
}
bad=$(ldd "$dir/tiletrain" | awk -v dir="$dir/lib/" -v base="$base" '
  /not found/ {print; next}
  $2 == "=>" && $3 ~ /^\// {
    if (index($3, dir) == 1) next
    name = $1; if (name ~ base) next
    print
  }')
if [ -n "$bad" ]; then
  echo "bundle: the unpacked binary takes libraries from outside the bundle:" >&2
  echo "$bad" >&2
  exit 1
fi
echo "bundle: ldd: every library but glibc, libstdc++ and libgcc_s from $name/lib"
# the loaders the binary opens (the Vulkan one at run time) are the bundle's
loaded=$(env -i HOME="$where/home" PATH=/usr/bin:/bin LD_DEBUG=files "$dir/tiletrain" devices \
  2>&1 >/dev/null | grep 'calling init' || true)
for loader in libOpenCL.so.1 libvulkan.so.1; do
  [ -e "$dir/lib/$loader" ] || continue
  if [[ $loaded != *"$dir/lib/$loader"* ]]; then
    echo "bundle: $loader was not loaded from $name/lib:" >&2
    echo "$loaded" >&2
    exit 1
  fi
done
echo "bundle: the OpenCL and Vulkan loaders opened from $name/lib"
run devices
run selftest >/dev/null
echo "bundle: selftest passed (default device)"
vulkan_devices=$(run devices --backend vulkan --json 2>/dev/null || true)
if [[ $vulkan_devices == *'"name"'* ]]; then
  run selftest --backend vulkan >/dev/null
  echo "bundle: selftest passed (Vulkan, through the bundled loader)"
fi
run data synth --out "$where/data" --format kaggle-rle --count 4 --size 96x128 --classes 2 \
  --seed 1 >/dev/null
run train --data "$where/data" --out "$where/run" --cache-dir "$where/tiles" --plan off \
  --steps 3 --tile 64x64 --micro-batch 2 --accum 1 --base-channels 4 --depth 2 --norm batch >/dev/null
[ -s "$where/run/last.safetensors" ] || {
  echo "bundle: the 3-step train wrote no checkpoint ($where/run/last.safetensors)" >&2
  exit 1
}
echo "bundle: a 3-step train passed from the unpacked bundle"
"$dir/gpu_check.sh" --help >/dev/null && [ -f "$dir/python/tiletrain_torch.py" ] || {
  echo "bundle: gpu_check.sh or its PyTorch peer is missing from the bundle" >&2
  exit 1
}

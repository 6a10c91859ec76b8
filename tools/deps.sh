#!/usr/bin/env bash
# Installs what tiletrain needs to build and test, on Debian or Ubuntu.
# Installs only what is missing; uses sudo when not root.  Safe to rerun.
set -euo pipefail

packages=(
  build-essential cmake pkg-config python3
  ocl-icd-opencl-dev opencl-headers clinfo pocl-opencl-icd
  libclblast-dev libstb-dev libtiff-dev libcjson-dev libinih-dev
  libcunit1-dev
  protobuf-c-compiler libprotobuf-c-dev python3-venv
  libvulkan-dev mesa-vulkan-drivers glslc vulkan-validationlayers spirv-tools vulkan-tools
  openmpi-bin libopenmpi-dev
)
# libFuzzer for tests/fuzz (the fuzz run falls back to a mutation loop without it);
# ccache for builds of a clean clone (CMakeLists.txt: TT_CCACHE);
# OpenBLAS's 64-bit-integer build for the PyTorch twins' float64 GEMM
# (tests/twin_dgemm.c: installed beside the reference BLAS, not instead)
optional=(clang libclang-rt-14-dev ccache libopenblas64-0-pthread)
# PyTorch is the peer of the parity tests and benchmarks (optional elsewhere).
if [ "${TT_WITH_TORCH:-1}" = 1 ]; then packages+=(python3-torch python3-torchvision python3-numpy python3-pil); fi
# headless Chromium renders report.html in tools/report_check.sh (on request: it is large)
if [ "${TT_WITH_CHROMIUM:-0}" = 1 ]; then packages+=(chromium); fi

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
want_optional=()
for p in "${optional[@]}"; do installed "$p" || want_optional+=("$p"); done
[ ${#missing[@]} -eq 0 ] && [ ${#want_optional[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
  [ ${#missing[@]} -eq 0 ] && exit 0
  echo "tools/deps.sh: apt-get not found; install these packages by hand: ${missing[*]}" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
  if ! command -v sudo >/dev/null; then
    [ ${#missing[@]} -eq 0 ] && exit 0
    echo "tools/deps.sh: run as root or install sudo; missing: ${missing[*]}" >&2
    exit 1
  fi
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# optional packages only where this distribution has them
for p in "${want_optional[@]}"; do apt-cache show "$p" >/dev/null 2>&1 && missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "tools/deps.sh: installing ${missing[*]}"
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

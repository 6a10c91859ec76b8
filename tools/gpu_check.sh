#!/usr/bin/env bash
# The device check for a machine with a GPU, in one command and a few
# minutes, from the release bundle (tools/bundle.sh puts this script, the
# binary and the PyTorch peer in one folder) or a build:
#   gpu_check.sh OUTDIR [--tiletrain PATH] [--python PATH] [--quick]
# Into OUTDIR, each as JSON, and everything it printed in OUTDIR/gpu_check.log:
#   devices-opencl.json, devices-vulkan.json   what each API lists
#   doctor-API-N.json      `doctor` on each GPU device of both APIs (the
#                          UNet at 128x128, micro-batch 2: every kernel checked)
#   bench-API-N-CONFIG.json, memory/API-N-CONFIG.json (docs/memory/'s format)
#                          for CONFIG unet-256 (256x256, micro-batch 4, accum 5),
#                          unet-resnet34-256 (the same) and unet-full (1400x2104,
#                          micro-batch 1): `bench --json`, `mem --measure --json`
#   torch-bench-CONFIG.json, torch-mem-CONFIG.json
#                          PyTorch on the same configurations, on the GPU where
#                          the Python's torch sees one (python/tiletrain_torch.py)
#   summary.json           each step, its file and whether it passed
# A driver installed outside the loaders' usual places (a container with
# NVIDIA's driver mounted) is looked for: a Vulkan ICD manifest is written
# for NVIDIA's library where none names it (VK_DRIVER_FILES), an OpenCL
# ICD file for each vendor library no file names, in a folder of its own
# (OCL_ICD_VENDORS); an API that still lists no GPU is said to be absent.
# Where no API lists a GPU, the CPU devices (PoCL, lavapipe) stand in.
#   --tiletrain PATH  the binary (default: the bundle's, beside this script,
#                     else build/tiletrain of the source tree)
#   --python PATH     the Python with torch for the peer (default python3)
#   --quick           smaller configurations (128x128, micro-batch 2, accum 2;
#                     the full-resolution step at 352x528): for CPU stand-ins
# Exits 1 when a step failed (all the others still run), 2 on bad usage.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="" tt="" python=python3 quick=0
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --tiletrain) tt=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    -*) echo "gpu_check: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) [ -z "$out" ] || { echo "gpu_check: one OUTDIR, not '$out' and '$1'" >&2; exit 2; }
       out=$1; shift ;;
  esac
done
[ -n "$out" ] || { echo "gpu_check: give OUTDIR (see --help)" >&2; exit 2; }
if [ -z "$tt" ]; then
  for c in "$here/tiletrain" "$here/../build/tiletrain"; do [ -x "$c" ] && { tt=$c; break; }; done
fi
[ -n "$tt" ] && [ -x "$tt" ] ||
  { echo "gpu_check: no tiletrain binary beside this script nor in build/: give --tiletrain PATH" >&2; exit 2; }
peer=""
for c in "$here/python/tiletrain_torch.py" "$here/../python/tiletrain_torch.py"; do
  [ -f "$c" ] && { peer=$c; break; }
done
mkdir -p "$out/memory" || exit 2
out=$(cd "$out" && pwd)
exec > >(tee -a "$out/gpu_check.log") 2>&1
echo "gpu_check: $(date -u +%Y-%m-%dT%H:%M:%SZ) $("$tt" --version) on $(uname -srm)"
failed=0 steps=()
# step NAME FILE CMD...: runs CMD with stdout into FILE; recorded in summary.json
step() {
  local name=$1 file=$2; shift 2
  local t0=$SECONDS ok=true
  echo "== $name"
  if ! "$@" >"$file"; then ok=false failed=1; echo "gpu_check: $name FAILED"; fi
  echo "   $name: $ok ($((SECONDS - t0)) s) -> ${file#"$out"/}"
  steps+=("{\"step\": \"$name\", \"file\": \"${file#"$out"/}\", \"passed\": $ok, \"seconds\": $((SECONDS - t0))}")
}

# the devices of one API whose type is GPU (or, with "CPU", CPU): their indices
devices_of() { # API TYPE
  "$tt" devices --backend "$1" --json 2>/dev/null | tr -d '\n\t ' | tr '{' '\n' |
    awk -v type="\"type\":\"$2\"" 'index($0, type) {
      if (match($0, /"index":[0-9]+/)) print substr($0, RSTART + 8, RLENGTH - 8) }'
}

# --- drivers outside the loaders' usual places -------------------------------
libdirs=(/usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/lib /usr/local/nvidia/lib64
         /usr/local/nvidia/lib /opt/rocm/lib /opt/intel/opencl/lib64)
find_lib() { # SONAME: its path, from ldconfig's cache or the folders above
  local p
  p=$(ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n && !found {print $NF; found = 1}')
  if [ -z "$p" ]; then
    for d in "${libdirs[@]}"; do [ -e "$d/$1" ] && { p=$d/$1; break; }; done
  fi
  echo "$p"
}
if [ -z "$(devices_of vulkan GPU)" ]; then
  # the loader reads the first three folders itself; the others it does not
  manifests=() added=0
  for d in /usr/share/vulkan/icd.d /etc/vulkan/icd.d /usr/local/share/vulkan/icd.d \
           /opt/*/share/vulkan/icd.d /usr/local/nvidia/share/vulkan/icd.d; do
    for f in "$d"/*.json; do
      [ -f "$f" ] || continue
      f=$(realpath "$f")
      [[ " ${manifests[*]} " == *" $f "* ]] && continue
      manifests+=("$f")
      case "$d" in /usr/share/*|/etc/*|/usr/local/share/*) ;; *) added=1 ;; esac
    done
  done
  nvidia=$(find_lib libGLX_nvidia.so.0)
  if [ -n "$nvidia" ] && ! grep -qs nvidia "${manifests[@]:-/dev/null}"; then
    mkdir -p "$out/icd/vulkan"
    printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "%s", "api_version": "1.3.0"}}\n' \
      "$nvidia" >"$out/icd/vulkan/nvidia_icd.json"
    manifests+=("$out/icd/vulkan/nvidia_icd.json") added=1
    echo "gpu_check: Vulkan: NVIDIA's $nvidia has no ICD manifest; wrote one"
  fi
  if [ "$added" = 1 ]; then
    VK_DRIVER_FILES=$(IFS=:; echo "${manifests[*]}")
    export VK_DRIVER_FILES VK_ICD_FILENAMES=$VK_DRIVER_FILES # the older loaders' name
  fi
  [ -n "$(devices_of vulkan GPU)" ] || echo "gpu_check: Vulkan lists no GPU here (driver absent)"
fi
if [ -z "$(devices_of opencl GPU)" ]; then
  mkdir -p "$out/icd/opencl"
  for f in /etc/OpenCL/vendors/*.icd; do [ -f "$f" ] && cp "$f" "$out/icd/opencl/"; done
  added=0
  for lib in libnvidia-opencl.so.1 libamdocl64.so libigdrcl.so; do
    p=$(find_lib "$lib")
    [ -n "$p" ] || continue
    grep -qs -e "$lib" -e "$p" "$out"/icd/opencl/*.icd && continue
    echo "$p" >"$out/icd/opencl/${lib%%.so*}.icd"
    added=1
    echo "gpu_check: OpenCL: $p has no ICD file; wrote one"
  done
  # in a folder of its own, with the system's files, for the ICD loader
  [ "$added" = 1 ] && export OCL_ICD_VENDORS=$out/icd/opencl
  [ -n "$(devices_of opencl GPU)" ] || echo "gpu_check: OpenCL lists no GPU here (driver absent)"
fi

# --- what to check -----------------------------------------------------------
step "devices (OpenCL)" "$out/devices-opencl.json" "$tt" devices --backend opencl --json
step "devices (Vulkan)" "$out/devices-vulkan.json" "$tt" devices --backend vulkan --json
kind=GPU
if [ -z "$(devices_of opencl GPU)$(devices_of vulkan GPU)" ]; then
  kind=CPU
  echo "gpu_check: no GPU on either API: the CPU devices stand in"
fi
if [ "$quick" = 1 ]; then
  configs=("unet-256:--tile 128x128 --micro-batch 2 --accum 2"
           "unet-resnet34-256:--model unet-resnet34 --tile 128x128 --micro-batch 2 --accum 2"
           "unet-full:--tile 352x528 --micro-batch 1 --accum 1")
else
  configs=("unet-256:--tile 256x256 --micro-batch 4 --accum 5"
           "unet-resnet34-256:--model unet-resnet34 --tile 256x256 --micro-batch 4 --accum 5"
           "unet-full:--tile 1400x2104 --micro-batch 1 --accum 1")
fi
for api in opencl vulkan; do
  for n in $(devices_of "$api" "$kind"); do
    d=(--backend "$api" --device "$n")
    step "doctor $api $n" "$out/doctor-$api-$n.json" \
      "$tt" doctor "${d[@]}" --plan off --tile 128x128 --micro-batch 2 --json
    for c in "${configs[@]}"; do
      name=${c%%:*}
      read -r -a flags <<<"${c#*:}"
      step "bench $api $n $name" "$out/bench-$api-$n-$name.json" \
        "$tt" bench "${d[@]}" --plan off "${flags[@]}" --steps 2 --json
      step "mem $api $n $name" "$out/memory/$api-$n-$name.json" \
        "$tt" mem "${d[@]}" --plan off "${flags[@]}" --measure --json
    done
  done
done
if [ -n "$peer" ] && "$python" -c 'import torch' 2>/dev/null; then
  where=$("$python" -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")')
  echo "gpu_check: PyTorch $("$python" -c 'import torch; print(torch.__version__)') on $where"
  for c in "${configs[@]}"; do
    name=${c%%:*}
    read -r -a flags <<<"${c#*:}"
    step "torch bench $name" "$out/torch-bench-$name.json" \
      "$python" "$peer" bench "${flags[@]}" --device auto
    step "torch mem $name" "$out/torch-mem-$name.json" \
      "$python" "$peer" mem "${flags[@]}" --device auto
  done
else
  echo "gpu_check: no PyTorch peer (${peer:-python/tiletrain_torch.py not found}; $python has no torch)"
fi
{
  echo "{\"tiletrain\": \"$("$tt" --version)\", \"devices\": \"$kind\", \"quick\": $quick, \"steps\": ["
  for i in "${!steps[@]}"; do
    [ "$i" -gt 0 ] && echo ","
    echo -n "  ${steps[$i]}"
  done
  echo "]}"
} >"$out/summary.json"
echo "gpu_check: $([ "$failed" = 0 ] && echo "every step passed" || echo "some steps FAILED"); $out"
exit "$failed"

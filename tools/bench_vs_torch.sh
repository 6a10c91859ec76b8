#!/usr/bin/env bash
# Training throughput beside the PyTorch peer, in one run: `tiletrain bench`
# and python/tiletrain_torch.py bench alternately (ROUNDS times each),
# same model, tile, micro-batch, accumulation, AdamW and 2 threads for the
# peer; prints images/s of both and the ratio of the medians.  --backends
# opencl,vulkan times each API in turn in every round (PoCL and lavapipe on
# a CPU machine) and prints every ratio.
#   tools/bench_vs_torch.sh [--tile 256x256] [--micro-batch 4] [--accum 5] [--steps 2]
#                           [--backends auto|opencl|vulkan|opencl,vulkan]
#                           [--model unet|unet-resnet18|unet-resnet34]
#                           [--norm group|batch|none] [--python PATH]
#   --python PATH (or PYTHON=PATH): the Python, with torch, that runs the
#     peer; default Debian's /usr/bin/python3 (PyTorch 1.13, python3-torch).
#     PyTorch 2.x from PyPI goes into a virtual environment of its own
#     (about 5 GB, two minutes; the tests never use it):
#       python3 -m venv ~/torch2 && ~/torch2/bin/pip install torch numpy
#       tools/bench_vs_torch.sh --python ~/torch2/bin/python
#   ROUNDS=N (default 2): rounds, each timing both sides once;
#   TT_TORCH_UNET=FILE: another peer with the same command line;
#   TT_BENCH_DIR=DIR: the peer DIR/torch_unet.py
#   BUILD_DIR=DIR: the tiletrain of DIR (default build); comparing two
#     builds, give each its own TT_CACHE_DIR: the find-db is one file per
#     device, timed again whenever the code differs (the timing spent on
#     that, and its picks, would fall on the run measured).
# tiletrain runs with --plan off: the recipe is the flags given.
set -euo pipefail
cd "$(dirname "$0")/.."
tile=256x256 mb=4 accum=5 steps=2 rounds=${ROUNDS:-2} backends=auto model=unet norm=group
python=${PYTHON:-/usr/bin/python3}
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --python) python=$2; shift 2 ;;
    --norm) norm=$2; shift 2 ;;
    --tile) tile=$2; shift 2 ;;
    --micro-batch) mb=$2; shift 2 ;;
    --accum) accum=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --backends) backends=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    *) echo "bench_vs_torch: unknown option $1" >&2; exit 2 ;;
  esac
done
tt=${BUILD_DIR:-build}/tiletrain
peer_py=${TT_TORCH_UNET:-${TT_BENCH_DIR:+$TT_BENCH_DIR/torch_unet.py}}
peer_py=${peer_py:-python/tiletrain_torch.py}
[ -x "$tt" ] || { echo "bench_vs_torch: build first (tools/build.sh)" >&2; exit 1; }
"$python" -c 'import torch' 2>/dev/null ||
  { echo "bench_vs_torch: $python has no torch: give --python PATH (see --help)" >&2; exit 1; }
torch_version=$("$python" -c 'import torch; print(torch.__version__)')
IFS=, read -r -a apis <<<"$backends"
declare -A ours
norm_arg=() # the ResNet UNets have batch norm, on both sides
[ "$model" = unet ] && norm_arg=(--norm "$norm")
peer=()
images_per_s() { /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["images_per_s"])'; }
for r in $(seq "$rounds"); do
  line="round $r:"
  for api in "${apis[@]}"; do
    v=$("$tt" bench --plan off --backend "$api" --model "$model" --tile "$tile" --micro-batch "$mb" \
          --accum "$accum" --steps "$steps" "${norm_arg[@]}" --json | images_per_s)
    ours[$api]="${ours[$api]:-} $v"
    line+=" tiletrain($api) $v"
  done
  model_arg=()
  model_arg=("${norm_arg[@]}")
  [ "$model" = unet ] || model_arg=(--model "$model") # the shared peer knows the UNet only
  peer+=("$("$python" "$peer_py" bench "${model_arg[@]}" --tile "$tile" \
              --micro-batch "$mb" --accum "$accum" --steps "$steps" --threads 2 | images_per_s)")
  echo "$line, PyTorch $torch_version ${peer[-1]} images/s"
done
args=()
for api in "${apis[@]}"; do args+=("$api=${ours[$api]}"); done
/usr/bin/python3 - "${peer[*]}" "$torch_version" "${args[@]}" <<'PY'
import statistics, sys
peer = statistics.median(float(x) for x in sys.argv[1].split())
version = sys.argv[2]
meds = {}
for arg in sys.argv[3:]:
    api, values = arg.split("=", 1)
    meds[api] = statistics.median(float(x) for x in values.split())
print("median images/s: " + ", ".join(f"tiletrain({a}) {v:.3f}" for a, v in meds.items())
      + f", PyTorch {version} {peer:.3f}")
for a, v in meds.items():
    print(f"ratio tiletrain({a}) / PyTorch {version}: {v / peer:.2f}")
apis = list(meds)
for i in range(1, len(apis)):
    print(f"ratio tiletrain({apis[i]}) / tiletrain({apis[0]}): {meds[apis[i]] / meds[apis[0]]:.2f}")
PY

#!/usr/bin/env bash
# Step memory against the PyTorch peer, in one run: the growth of peak
# process RSS over one training window, tiletrain (through `mem --measure`,
# on the chosen device; on PoCL device memory is host memory) beside
# python/tiletrain_torch.py mem with the same model, tile and batch.
#   tools/bench_mem.sh [--tile 256x256] [--micro-batch 4] [--model NAME] [--python PATH]
#                      [extra tiletrain flags]
#   --python PATH (or PYTHON=PATH): the Python, with torch, that runs the
#     peer; default Debian's /usr/bin/python3 (PyTorch 1.13, python3-torch).
#     PyTorch 2.x from PyPI goes into a virtual environment of its own
#     (about 5 GB, two minutes; the tests never use it):
#       python3 -m venv ~/torch2 && ~/torch2/bin/pip install torch numpy
#       tools/bench_mem.sh --python ~/torch2/bin/python
#   ROUNDS=N (default 5): runs of each side; the medians are compared
#   TT_TORCH_UNET=FILE: another peer with the same command line;
#   TT_BENCH_DIR=DIR: the peer DIR/torch_unet.py
set -euo pipefail
cd "$(dirname "$0")/.."
tile=256x256 mb=4 model=unet
python=${PYTHON:-/usr/bin/python3}
extra=()
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --python) python=$2; shift 2 ;;
    --tile) tile=$2; shift 2 ;;
    --micro-batch) mb=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done
peer_py=${TT_TORCH_UNET:-${TT_BENCH_DIR:+$TT_BENCH_DIR/torch_unet.py}}
peer_py=${peer_py:-python/tiletrain_torch.py}
tt=${BUILD_DIR:-build}/tiletrain
[ -x "$tt" ] || { echo "bench_mem: build first (tools/build.sh)" >&2; exit 1; }
"$python" -c 'import torch' 2>/dev/null ||
  { echo "bench_mem: $python has no torch: give --python PATH (see --help)" >&2; exit 1; }
torch_version=$("$python" -c 'import torch; print(torch.__version__)')
# PyTorch's figure moves a lot from run to run (up to a factor of two): both
# sides run ROUNDS times, alternately, and the medians are compared.
rounds=${ROUNDS:-5}
ours=() peer=()
for r in $(seq "$rounds"); do
  ours+=("$("$tt" mem --model "$model" --tile "$tile" --micro-batch "$mb" --format kaggle-rle --classes 4 --measure --json "${extra[@]}" |
            /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["measured"]["process_step_growth_bytes"])')")
  model_arg=()
  [ "$model" = unet ] || model_arg=(--model "$model") # the shared peer knows the UNet only
  peer+=("$("$python" "$peer_py" mem "${model_arg[@]}" --tile "$tile" --micro-batch "$mb" |
            /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["step_mem_mib"] * 1048576)')")
done
/usr/bin/python3 - "${ours[*]}" "${peer[*]}" "$tile" "$mb" "${extra[*]:-}" "$torch_version" <<'PY'
import statistics, sys
ours = [float(x) for x in sys.argv[1].split()]
peer = [float(x) for x in sys.argv[2].split()]
version = sys.argv[6]
mib = lambda v: " ".join(f"{x / 2**20:.0f}" for x in v)
o, p = statistics.median(ours), statistics.median(peer)
print(f"tile {sys.argv[3]}, micro-batch {sys.argv[4]} {sys.argv[5]}".rstrip())
print(f"  tiletrain step memory {o / 2**20:8.1f} MiB (runs: {mib(ours)})")
print(f"  PyTorch {version} step memory {p / 2**20:8.1f} MiB (runs: {mib(peer)})")
print(f"  ratio of the medians {o / p:.2f}")
PY

#!/usr/bin/env bash
# Step memory against the PyTorch peer, in one run: the growth of peak
# process RSS over one training window, tiletrain (through `mem --measure`,
# on the chosen device; on PoCL device memory is host memory) beside
# ../shared/bench/torch_unet.py mem with the same model, tile and batch.
#   tools/bench_mem.sh [--tile 256x256] [--micro-batch 4] [extra tiletrain flags]
set -euo pipefail
cd "$(dirname "$0")/.."
tile=256x256 mb=4
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --tile) tile=$2; shift 2 ;;
    --micro-batch) mb=$2; shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done
bench=${TT_BENCH_DIR:-../shared/bench}
tt=${BUILD_DIR:-build}/tiletrain
[ -x "$tt" ] || { echo "bench_mem: build first (tools/build.sh)" >&2; exit 1; }
ours=$("$tt" mem --tile "$tile" --micro-batch "$mb" --format kaggle-rle --classes 4 --measure --json "${extra[@]}" |
       /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["measured"]["process_step_growth_bytes"])')
peer=$(/usr/bin/python3 "$bench/torch_unet.py" mem --tile "$tile" --micro-batch "$mb" |
       /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["step_mem_mib"] * 1048576)')
/usr/bin/python3 - "$ours" "$peer" "$tile" "$mb" "${extra[*]:-}" <<'PY'
import sys
ours, peer = float(sys.argv[1]), float(sys.argv[2])
print(f"tile {sys.argv[3]}, micro-batch {sys.argv[4]} {sys.argv[5]}".rstrip())
print(f"  tiletrain step memory {ours / 2**20:8.1f} MiB")
print(f"  PyTorch   step memory {peer / 2**20:8.1f} MiB")
print(f"  ratio {ours / peer:.2f}")
PY

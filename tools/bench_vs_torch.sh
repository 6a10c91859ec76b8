#!/usr/bin/env bash
# Training throughput beside the PyTorch peer, in one run: `tiletrain bench`
# and python/tiletrain_torch.py bench alternately (ROUNDS times each),
# same model, tile, micro-batch, accumulation, AdamW and 2 threads for the
# peer; prints images/s of both and the ratio of the medians.
#   tools/bench_vs_torch.sh [--tile 256x256] [--micro-batch 4] [--accum 5] [--steps 2]
#   TT_TORCH_UNET=FILE: another peer with the same command line;
#   TT_BENCH_DIR=DIR: the peer DIR/torch_unet.py
set -euo pipefail
cd "$(dirname "$0")/.."
tile=256x256 mb=4 accum=5 steps=2 rounds=${ROUNDS:-2}
while [ $# -gt 0 ]; do
  case "$1" in
    --tile) tile=$2; shift 2 ;;
    --micro-batch) mb=$2; shift 2 ;;
    --accum) accum=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    *) echo "bench_vs_torch: unknown option $1" >&2; exit 2 ;;
  esac
done
tt=${BUILD_DIR:-build}/tiletrain
peer_py=${TT_TORCH_UNET:-${TT_BENCH_DIR:+$TT_BENCH_DIR/torch_unet.py}}
peer_py=${peer_py:-python/tiletrain_torch.py}
[ -x "$tt" ] || { echo "bench_vs_torch: build first (tools/build.sh)" >&2; exit 1; }
ours=() peer=()
for r in $(seq "$rounds"); do
  ours+=("$("$tt" bench --tile "$tile" --micro-batch "$mb" --accum "$accum" --steps "$steps" --json |
            /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["images_per_s"])')")
  peer+=("$(/usr/bin/python3 "$peer_py" bench --tile "$tile" --micro-batch "$mb" \
              --accum "$accum" --steps "$steps" --threads 2 |
            /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["images_per_s"])')")
  echo "round $r: tiletrain ${ours[-1]} images/s, PyTorch ${peer[-1]} images/s"
done
/usr/bin/python3 - "${ours[*]}" "${peer[*]}" <<'PY'
import statistics, sys
ours = [float(x) for x in sys.argv[1].split()]
peer = [float(x) for x in sys.argv[2].split()]
o, p = statistics.median(ours), statistics.median(peer)
print(f"median: tiletrain {o:.3f} images/s, PyTorch {p:.3f} images/s, ratio {o / p:.2f}")
PY

#!/usr/bin/env bash
# Data parallel on this machine (issue 22's benchmarks), alternating runs:
#   1. K ranks of one PoCL thread each against one process of K threads, the
#      same global window (K x micro-batch B x accum N = B x K*N): images/s
#      from train.jsonl (the first step, kernel builds, left out) and the
#      gradient allreduce's seconds per window;
#   2. the allreduce of a ~24M-parameter model's gradients (a UNet of base
#      56, depth 4: the size of a ResNet-34 UNet) and its share of a window.
# usage: tools/bench_mpi.sh [BUILD_DIR] [ROUNDS]   (Open MPI, PoCL; minutes)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rounds=${2:-2}
tt=$build/tiletrain
ranks=${RANKS:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
mpi() { mpirun --oversubscribe --allow-run-as-root -np "$ranks" "$@"; }
"$tt" data synth --out data --format folder --count 16 --size 384x512 >/dev/null
common=(--data data --cache-dir "$work/cache" --backend opencl --quiet --no-augment --seed 1 --plan off)

# mean of a field of train.jsonl's step lines after the first
field() {
  python3 - "$1" "$2" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"step"')][1:]
vals = [r[sys.argv[2]] for r in rows if sys.argv[2] in r]
print(f"{sum(vals) / len(vals):.4g}" if vals else "-")
PY
}

echo "== $ranks ranks x 1 PoCL thread vs 1 process x $ranks threads (tile 256, window $((ranks * 2 * 2)) images)"
run=(--tile 256x256 --micro-batch 2 --steps 6)
for r in $(seq "$rounds"); do
  POCL_MAX_PTHREAD_COUNT=$ranks "$tt" train "${common[@]}" "${run[@]}" --accum $((2 * ranks)) --out one$r
  POCL_MAX_PTHREAD_COUNT=1 mpi "$tt" train "${common[@]}" "${run[@]}" --accum 2 --out many$r 2>/dev/null
  one=$(field one$r/train.jsonl images_per_s)
  many=$(field many$r/train.jsonl images_per_s)
  echo "round $r: 1 process $one img/s, $ranks ranks $many img/s (ratio $(python3 -c "print(f'{$many/$one:.2f}')")), allreduce $(field many$r/train.jsonl allreduce_s) s/window"
done

echo "== allreduce of a 24M-parameter model (base 56, depth 4), tile 128, micro-batch 1 x accum 2"
big=(--base-channels 56 --depth 4 --tile 128x128 --micro-batch 1 --accum 2 --steps 4)
POCL_MAX_PTHREAD_COUNT=1 mpi "$tt" train "${common[@]}" "${big[@]}" --out big 2>/dev/null
python3 - big/train.jsonl <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"step"')][1:]
cfg = json.loads(open(sys.argv[1]).readline())
a = sum(r["allreduce_s"] for r in rows) / len(rows)
w = sum(r["images"] / r["images_per_s"] for r in rows) / len(rows)
print(f"allreduce {a:.3f} s of a {w:.2f} s window ({100 * a / w:.1f}%)")
PY
python3 - big/last.safetensors <<'PY'
import json, math, struct, sys
d = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", d[:8])[0]
h = json.loads(d[8:8 + n]); h.pop("__metadata__", None)
print(f"{sum(math.prod(v['shape']) for k, v in h.items() if not k.startswith('optim.') and 'running' not in k and 'num_batches' not in k) / 1e6:.1f}M parameters")
PY

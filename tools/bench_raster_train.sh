#!/usr/bin/env bash
# Training from rasters (issue 43): the data wait train.jsonl records per
# step (data_wait_s: how long the device side waited for the prefetch
# thread's batches) training from a synthetic 16-bit multi-band GeoTIFF
# scene and its mask (make_raster --pair), against the quick start's data
# (data synth: 40 JPEGs of 1400x2100 with Kaggle RLE masks, read through
# the tile cache: once cold, as a first run builds it, once warm), with the
# same recipe at the quick start's rate: the planned quick start's crops
# and batches (128x128, micro-batch 4 x accum 2, batch norm, 8 channels,
# depth 3), each run --steps long.  Prints per run: steps, images/s, the mean and the largest
# data wait of a step (the first, which tunes the kernels, left out) and
# the waits' share of the wall time.
#
#   tools/bench_raster_train.sh [SIDE [BANDS [STEPS]]]
#       defaults: 8192 13 60 (an 8192 x 8192 scene of 13 bands, 1.6 GiB of
#       samples: a 128 px crop decodes about four 256 px tiles of 1.7 MB, 26
#       bytes a pixel against the cache's 3); 8192 4 for an RGBN scene.  BUILD_DIR (default build), WORK (default a temporary
#       folder, removed) and TT_CACHE_DIR are read from the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
side=${1:-8192}
bands=${2:-13}
steps=${3:-60}
work=${WORK:-$(mktemp -d)}
[ -n "${WORK:-}" ] || trap 'rm -rf "$work"' EXIT
tt=$build/tiletrain

[ -f "$work/raster/masks/scene.tif" ] || "$build/make_raster" --pair "$work/raster" "$side" "$side" "$bands"
[ -f "$work/rle/train.csv" ] ||
  "$tt" data synth --out "$work/rle" --format kaggle-rle --count 40 --size 1400x2100 --classes 4 --seed 1 >/dev/null
recipe=(--plan off --tile 128x128 --micro-batch 4 --accum 2 --batch 8 --norm batch --base-channels 8
        --depth 3 --lr 1e-2 --schedule cosine --augment flip,rot90 --steps "$steps" --quiet)
rm -rf "$work/tiles"
"$tt" train --data "$work/rle" --out "$work/run_rle" --cache-dir "$work/tiles" "${recipe[@]}"
"$tt" train --data "$work/rle" --out "$work/run_rle_warm" --cache-dir "$work/tiles" "${recipe[@]}"
"$tt" train --data "$work/raster" --out "$work/run_raster" "${recipe[@]}"

summary() { # LABEL TRAIN.JSONL
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
label, path = sys.argv[1:3]
steps = [json.loads(l) for l in open(path)]
steps = [s for s in steps if "data_wait_s" in s and "loss" in s]
rest = steps[1:]  # step 1 tunes the kernels
wall = sum(s["images"] / s["images_per_s"] for s in rest)  # a step's seconds
waits = [s["data_wait_s"] for s in rest]
images = sum(s["images"] for s in rest)
print(f"{label:>9}: {len(steps)} steps, {images / wall:6.1f} img/s after step 1, data wait "
      f"mean {sum(waits) / len(waits) * 1000:7.2f} ms, max {max(waits) * 1000:7.2f} ms a step, "
      f"{100 * sum(waits) / wall:5.2f}% of the wall time")
PY
}
summary "rle cold" "$work/run_rle/train.jsonl"
summary "rle warm" "$work/run_rle_warm/train.jsonl"
summary "raster" "$work/run_raster/train.jsonl"

#!/usr/bin/env bash
# The quick start, on a fresh Debian or Ubuntu machine: install what is
# missing, build, then the main job on built-in defaults:
#   1. list the devices and run the smoke kernels;
#   2. write a small synthetic clouds data set (kaggle-rle, JPEG + train.csv);
#   3. train the UNet with gradient accumulation (micro-batch 2 x accum 4)
#      on the best device found (a GPU, else PoCL on the CPU), validating
#      on a held-out split;
#   4. predict a validation image at full resolution.
# Everything goes under ${QUICKSTART_DIR:-runs/quickstart}.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
tools/build.sh
tt=${BUILD_DIR:-build}/tiletrain
out=${QUICKSTART_DIR:-runs/quickstart}
mkdir -p "$out"

"$tt" devices
"$tt" selftest
"$tt" data synth --out "$out/data" --format kaggle-rle --count 12 --size 256x384 --classes 4 --seed 1
"$tt" data check --data "$out/data"
"$tt" train --data "$out/data" --out "$out/run" --cache-dir "$out/tiles" \
    --tile 128x128 --micro-batch 2 --accum 4 --steps ${QUICKSTART_STEPS:-20} \
    --base-channels 8 --depth 3 --groups 4 --lr 3e-3 --dice-weight 1 --fg-fraction 0.33 \
    --val-fraction 0.17 --checkpoint-every 10
first=$(ls "$out/data/train_images" | head -n 1)
"$tt" predict --checkpoint "$out/run/best.safetensors" --input "$out/data/train_images/$first" \
    --out "$out/predictions" --tile 128x128 --rle "$out/predictions/submission.csv" --quiet
echo
echo "quick start done:"
echo "  data set      $out/data        (tiletrain data check --data $out/data)"
echo "  training log  $out/run/train.jsonl"
echo "  checkpoints   $out/run/last.safetensors, $out/run/best.safetensors"
echo "  report        $out/run/report.html"
echo "  predictions   $out/predictions  (masks, overlays, submission.csv)"

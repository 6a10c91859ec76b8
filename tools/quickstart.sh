#!/usr/bin/env bash
# The quick start, on a fresh Debian or Ubuntu machine: install what is
# missing, build, then the main job:
#   1. list the devices and run the smoke kernels;
#   2. write the synthetic clouds data set: 40 images of 1400x2100, 4 classes,
#      Kaggle RLE layout (JPEG + train.csv), full resolution;
#   3. train the UNet on 128x128 crops with gradient accumulation (micro-batch
#      4 x accum 2) on the best device found (a GPU, else PoCL on the CPU),
#      validating the held-out images at full resolution as it goes;
#   4. predict the validation images at full resolution (masks, overlays and
#      a Kaggle submission CSV);
#   5. write the training report (report.html).
# Everything goes under ${QUICKSTART_DIR:-runs/quickstart}; about ten minutes
# on two CPU cores, most of it training.  QUICKSTART_STEPS changes the length.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
tools/build.sh
tt=${BUILD_DIR:-build}/tiletrain
out=${QUICKSTART_DIR:-runs/quickstart}
mkdir -p "$out"

"$tt" devices
"$tt" selftest
if [ ! -f "$out/data/train.csv" ]; then
  "$tt" data synth --out "$out/data" --format kaggle-rle --count 40 --size 1400x2100 --classes 4 --seed 1
fi
"$tt" data check --data "$out/data"
# Batch norm, not group norm: a 128x128 crop often lies inside one large
# region, and normalising each crop on its own (group norm) removes the very
# colour that tells the classes apart (see docs/guide.md).  Components under
# 10000 pixels are dropped from predictions: the smallest region of this data
# set covers about 90000 (as the clouds winners dropped small ones).
"$tt" train --data "$out/data" --out "$out/run" --cache-dir "$out/tiles" \
    --tile 128x128 --micro-batch 4 --accum 2 --steps "${QUICKSTART_STEPS:-150}" \
    --base-channels 8 --depth 3 --norm batch --lr 1e-2 --schedule cosine --dice-weight 1 \
    --fg-fraction 0.33 --val-fraction 0.1 --val-every 50 --min-size 10000 --checkpoint-every 50

# the validation images, at full resolution, with the best weights
rm -rf "$out/validation_images"
mkdir -p "$out/validation_images"
grep -v '^#' "$out/run/validation.txt" | while read -r name; do
  ln -s "$(cd "$out/data/train_images" && pwd)/$name" "$out/validation_images/$name"
done
"$tt" predict --checkpoint "$out/run/best.safetensors" --input "$out/validation_images" \
    --out "$out/predictions" --tile 256x256 --overlap 0.25 --min-size 10000 \
    --rle "$out/predictions/submission.csv" --rle-size 350x525 --quiet

echo
echo "quick start done:"
echo "  data set      $out/data          (tiletrain data check --data $out/data)"
echo "  training log  $out/run/train.jsonl"
echo "  checkpoints   $out/run/last.safetensors, $out/run/best.safetensors (best validation Dice)"
echo "  report        $out/run/report.html   (curves, memory, device, validation gallery)"
echo "  predictions   $out/predictions    (masks, overlays, submission.csv)"

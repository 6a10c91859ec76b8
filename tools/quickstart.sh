#!/usr/bin/env bash
# The quick start, on a fresh Debian or Ubuntu machine: install what is
# missing, build, then the main job:
#   1. list the devices and run the smoke kernels;
#   2. write the synthetic clouds data set: 40 images of 1400x2100, 4 classes,
#      Kaggle RLE layout (JPEG + train.csv), full resolution;
#   3. train the UNet with the recipe tiletrain plans from the data set and
#      the device (run/plan.json says what and why: on two CPU cores 128x128
#      crops, micro-batch 4 x accum 2, batch norm, the data set's mean and
#      std, BCE + Dice, AdamW 1e-2 cosine, 180 steps), validating the
#      held-out images at full resolution as it goes;
#   4. predict the validation images at full resolution (masks, overlays and
#      a Kaggle submission CSV);
#   5. write the training report (report.html).
# Everything goes under ${QUICKSTART_DIR:-runs/quickstart}; about three
# minutes on two CPU cores, the build included (a first run compiles and
# times the kernels in its first step).  QUICKSTART_STEPS changes the length
# (the plan's step count otherwise).
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
# No recipe flags: train plans them (`tiletrain plan --data DIR` prints the
# plan with its reasons; docs/guide.md, "Planned runs"); any flag given
# overrides its part.
"$tt" train --data "$out/data" --out "$out/run" --cache-dir "$out/tiles" \
    ${QUICKSTART_STEPS:+--steps "$QUICKSTART_STEPS"}

# the validation images, at full resolution, with the best weights
rm -rf "$out/validation_images"
mkdir -p "$out/validation_images"
grep -v '^#' "$out/run/validation.txt" | while read -r name; do
  ln -s "$(cd "$out/data/train_images" && pwd)/$name" "$out/validation_images/$name"
done
# components smaller than the plan's min-size are dropped, as validation did
# the threshold and minimum size of each class: the ones the training run
# searched on its validation images, kept in the checkpoint
"$tt" predict --checkpoint "$out/run/best.safetensors" --input "$out/validation_images" \
    --out "$out/predictions" --tile 256x256 --overlap 0.25 \
    --rle "$out/predictions/submission.csv" --rle-size 350x525 --quiet

echo
echo "quick start done:"
echo "  data set      $out/data          (tiletrain data check --data $out/data)"
echo "  plan          $out/run/plan.json   (the recipe chosen, with the reasons)"
echo "  training log  $out/run/train.jsonl"
echo "  checkpoints   $out/run/last.safetensors, $out/run/best.safetensors (best validation Dice)"
echo "  report        $out/run/report.html   (the recipe and why, augmented crops, curves, post-processing, memory, validation gallery)"
echo "  predictions   $out/predictions    (masks, overlays, submission.csv)"

#!/usr/bin/env bash
# What each part of the recipe is worth, measured: on synthetic sets made
# harder than the quick start's, the planned recipe and the same recipe
# with one thing changed (augmentation, test-time augmentation, EMA, each
# loss), all for the same steps, and the same recipe trained by PyTorch
# (tools/torch_recipe.py, albumentations for the augmentation), each
# scored by full-resolution validation Dice on the same held-out images.
# Prints one table per set: Dice at the plan's threshold and minimum size,
# after the per-class post-processing search (and its gain and seconds),
# training images/s and data wait per step.  A benchmark, never run by CI.
#   tools/bench_recipe.sh [--sets small,rare,grey] [--count 40] [--size 700x1050]
#                         [--steps N] [--runs LIST] [--python PATH] [--out DIR]
#                         [--train-flags "FLAGS"]
#   sets:  small  --region-scale 0.35 (regions a third the size)
#          rare   --rare-class 0.1 (the last class in a tenth of the images)
#          grey   --grey (one channel: colour gives nothing away)
#   runs (default all): plan, augment-default (flips, turns, brightness and
#          contrast only), tta (--tta flip), ema (--ema 0.95), bce (--loss
#          bce), dice-window (bce+dice:reduce=window), focal (focal+dice),
#          lovasz (bce+lovasz), tversky (bce+tversky), torch (the plan's
#          recipe in PyTorch), torch-none (the same without augmentation)
#   --python PATH: a Python with torch and albumentations for the torch
#          runs (PyTorch 2.x from PyPI in a virtual environment:
#          python3 -m venv ~/torch2 && ~/torch2/bin/pip install torch albumentations);
#          default ~/torch2/bin/python; the torch runs are left out without one.
#   --train-flags: given to every tiletrain run (e.g. "--val-fraction 0.25"
#          for more held-out images: the torch runs take the plan run's).
# Everything goes under --out (default runs/bench_recipe); a set's data and
# a finished run are reused when there.  BUILD_DIR=DIR: the tiletrain of DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
sets=small,rare,grey count=40 size=700x1050 steps="" out=runs/bench_recipe train_flags=""
runs=plan,augment-default,tta,ema,bce,dice-window,focal,lovasz,tversky,torch,torch-none
python=${PYTHON:-$HOME/torch2/bin/python}
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --sets) sets=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --train-flags) train_flags=$2; shift 2 ;;
    *) echo "bench_recipe: unknown option $1 (--help lists them)" >&2; exit 2 ;;
  esac
done
tt=${BUILD_DIR:-build}/tiletrain
[ -x "$tt" ] || { echo "bench_recipe: build first (tools/build.sh)" >&2; exit 1; }
has_torch=1
"$python" -c 'import torch, albumentations' 2>/dev/null || {
  has_torch=0
  echo "bench_recipe: $python lacks torch or albumentations: the torch runs are left out (--help)" >&2
}

set_flags() {
  case $1 in
    small) echo "--region-scale 0.35" ;;
    rare) echo "--rare-class 0.1" ;;
    grey) echo "--grey" ;;
    *) echo "bench_recipe: unknown set $1 (small, rare, grey)" >&2; return 1 ;;
  esac
}
run_flags() {
  case $1 in
    plan) echo "" ;;
    augment-default) echo "--augment default" ;;
    tta) echo "--tta flip" ;;
    ema) echo "--ema 0.95" ;;
    bce) echo "--loss bce" ;;
    dice-window) echo "--loss bce+dice:reduce=window" ;;
    focal) echo "--loss focal+dice" ;;
    lovasz) echo "--loss bce+lovasz" ;;
    tversky) echo "--loss bce+tversky" ;;
    *) echo "bench_recipe: unknown run $1 (--help lists them)" >&2; return 1 ;;
  esac
}

for set in ${sets//,/ }; do
  data=$out/$set/data
  if [ ! -f "$data/train.csv" ]; then
    # shellcheck disable=SC2046
    "$tt" data synth --out "$data" --format kaggle-rle --count "$count" --size "$size" \
        --classes 4 --seed 1 $(set_flags "$set")
  fi
  for run in ${runs//,/ }; do
    dir=$out/$set/$run
    case $run in
      torch|torch-none)
        [ "$has_torch" = 1 ] || continue
        [ -f "$dir.json" ] && continue
        [ -f "$out/$set/plan/train.jsonl" ] ||
          { echo "bench_recipe: the torch runs copy the plan run's recipe: run plan first" >&2; continue; }
        aug=tiletrain
        [ "$run" = torch-none ] && aug=none
        echo "== $set / $run" >&2
        "$python" tools/torch_recipe.py --run "$out/$set/plan" --data "$data" --augment "$aug" \
            --threads 2 --blend gaussian --out "$dir.json" >&2
        ;;
      *)
        [ -f "$dir/last.safetensors" ] && continue
        echo "== $set / $run" >&2
        rm -rf "$dir"
        # shellcheck disable=SC2046,SC2086
        "$tt" train --data "$data" --out "$dir" --cache-dir "$out/$set/tiles" --quiet \
            ${steps:+--steps "$steps"} $train_flags $(run_flags "$run") >&2
        ;;
    esac
  done
done

# one table per set, from the runs' logs
python3 - "$out" "$sets" "$runs" <<'EOF'
import json, os, statistics, sys

out, sets, runs = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")


def from_log(path):
    steps, val, pp = [], None, None
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            if "loss" in d and "step" in d and "images_per_s" in d:
                steps.append(d)
            if "validation" in d:
                val = d["validation"]
            if "postprocess" in d:
                pp = d["postprocess"]
    later = [s for s in steps if s["step"] > 1] or steps  # the first step compiles kernels
    return {"dice": val["mean_dice"] if val else None,
            "searched": pp["mean_dice"] if pp else None,
            "pp_s": pp.get("seconds") if pp else None,
            "img_s": statistics.median(s["images_per_s"] for s in later) if later else None,
            "wait": statistics.mean(s["data_wait_s"] for s in later) if later else None,
            "steps": steps[-1]["step"] if steps else 0}


def fmt(v, f="%.4f"):
    return "-" if v is None else f % v


for s in sets:
    print(f"\n### {s}\n")
    print("| run | steps | Dice | Dice, searched post-processing | gain | search s | images/s | data wait s/step |")
    print("|---|---|---|---|---|---|---|---|")
    for r in runs:
        base = os.path.join(out, s, r)
        if r.startswith("torch"):
            if not os.path.exists(base + ".json"):
                continue
            d = json.load(open(base + ".json"))
            row = {"dice": d.get("mean_dice"), "searched": None, "pp_s": None,
                   "img_s": d.get("images_per_s"), "wait": None, "steps": d.get("steps", 0)}
            if d.get("steps"):
                row["wait"] = d.get("data_s", 0) / d["steps"]
        elif os.path.exists(os.path.join(base, "train.jsonl")):
            row = from_log(os.path.join(base, "train.jsonl"))
        else:
            continue
        gain = None if row["searched"] is None or row["dice"] is None else row["searched"] - row["dice"]
        print(f"| {r} | {row['steps']} | {fmt(row['dice'])} | {fmt(row['searched'])} | "
              f"{fmt(gain, '%+.4f')} | {fmt(row['pp_s'], '%.2f')} | {fmt(row['img_s'], '%.1f')} | "
              f"{fmt(row['wait'], '%.3f')} |")
EOF

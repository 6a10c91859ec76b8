#!/usr/bin/env bash
# Training from raster pairs (issue 43), as a person meets it (CTest runs it
# as test_cli_raster):
#   - a 16-bit, 4-band GeoTIFF and its mask (tools/make_raster.c --pair)
#     train a few steps with --bands 3,2,1; the checkpoint records the bands
#     and each one's mean and std in the samples' own scale;
#   - --val-fraction holds out blocks of the one scene (or whole scenes of
#     several) and validates them; a resumed run takes the same crops: 1 + 1
#     steps = 2, bit for bit, validated after every step or only at the end;
#   - predict on the raster takes the checkpoint's bands by default and
#     writes a mask on the raster's grid with its GeoTIFF tags, the scene's
#     nodata 255 there (and its GDAL_NODATA 255, not the image's); --bands of
#     another count is refused naming the checkpoint;
#   - predict --cog writes the same mask with its overviews;
#   - data check reports the rasters, bands, sample format and nodata share;
#   - eval on the raster set scores the scene as its predicted mask scores
#     (counted here), and a run's held-out blocks as the run scored them;
#   - plan on the rasters: flips and turns only, no held-out validation by default;
#   - bad input is refused naming the file: a mask on another grid, an
#     image without its mask, a band out of range, --mean with rasters,
#     --val-list (blocks are not named images), a scene too small to keep a
#     block for training.
# usage: tests/cli/raster_check.sh BUILD_DIR
set -uo pipefail
build=$(cd "${1:?usage: raster_check.sh BUILD_DIR}" && pwd)
tt=$build/tiletrain
. "$(dirname "$0")/lib.sh"

"$build/make_raster" --pair "$work/data" 600 520 4 || { echo "FAIL: make_raster --pair"; exit 1; }
run=(--data "$work/data" --tile 64x64 --micro-batch 2 --batch 2 --steps 3 --plan off --quiet)
if "$tt" train "${run[@]}" --bands 3,2,1 --out "$work/run" 2>"$work/err" &&
   /usr/bin/python3 - "$work/run/last.safetensors" "$work/run/train.jsonl" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    meta = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))["__metadata__"]
assert json.loads(meta["bands"]) == [3, 2, 1], meta.get("bands")
assert json.loads(meta["model"])["in_channels"] == 3
mean, std = json.loads(meta["band_mean"]), json.loads(meta["band_std"])
assert len(mean) == 3 and all(m > 255 for m in mean), mean  # 16-bit scale, not / 255
assert all(s > 1 for s in std), std
steps = [json.loads(l) for l in open(sys.argv[2]) if '"loss"' in l and '"step"' in l]
assert len(steps) == 3 and all("data_wait_s" in s for s in steps), steps[-1:]
PY
then pass "train from a raster pair: bands 3,2,1 and their statistics in the checkpoint"
else fail "train from a raster pair"; cat "$work/err"; fi

# the crop stream restored: 1 step then a resume to 2 = 2 steps, bit for bit, with a
# held-out grid of blocks validated after every step; and validating after every step
# or only at the end trains the same weights
val=(--val-fraction 0.2 --val-every 1)
if "$tt" train "${run[@]}" "${val[@]}" --steps 2 --out "$work/two" 2>"$work/err" &&
   "$tt" train "${run[@]}" "${val[@]}" --steps 1 --out "$work/one" 2>>"$work/err" &&
   "$tt" train "${run[@]}" "${val[@]}" --steps 2 --out "$work/one" --resume "$work/one/last.safetensors" 2>>"$work/err" &&
   "$tt" train "${run[@]}" --val-fraction 0.2 --steps 2 --out "$work/end" 2>>"$work/err" &&
   /usr/bin/python3 "$(dirname "$0")/same_checkpoint.py" --tol 0 "$work/two/last.safetensors" \
     "$work/one/last.safetensors" >"$work/same" 2>&1 &&
   /usr/bin/python3 "$(dirname "$0")/same_checkpoint.py" --tol 0 "$work/two/last.safetensors" \
     "$work/end/last.safetensors" >>"$work/same" 2>&1 &&
   /usr/bin/python3 - "$work/two" <<'PY'
import json, sys
lines = [l.split() for l in open(sys.argv[1] + "/validation.txt") if not l.startswith("#")]
assert len(lines) == 5 and all(l[0] == "scene.tif" for l in lines), lines  # 1 in 5 of 5x5 blocks of 128
vals = [json.loads(l)["validation"] for l in open(sys.argv[1] + "/train.jsonl") if '"validation"' in l]
assert len(vals) == 2 and all(v["images"] == 5 for v in vals), vals  # after step 1, at the end
assert all(0 <= c["dice"] <= 1 for v in vals for c in v["classes"])
PY
then pass "train from rasters with held-out blocks: 1 step + resume 1 = 2 steps, bit for bit, validated or not"
else fail "train from rasters, resumed, validated"; cat "$work/err" "$work/same"; fi

pred=(--checkpoint "$work/run/last.safetensors" --input "$work/data/images/scene.tif" --tile 64x64 --quiet)
if "$tt" predict "${pred[@]}" --out "$work/pred" 2>"$work/err" &&
   /usr/bin/python3 - "$work/data/masks/scene.tif" "$work/pred/scene_mask.tif" <<'PY'
import sys
from PIL import Image
label, mask = (Image.open(p) for p in sys.argv[1:3])
assert mask.size == label.size == (600, 520), (mask.size, label.size)
for tag in (33550, 33922, 34735):
    assert mask.tag_v2.get(tag) == label.tag_v2.get(tag), tag
import numpy as np
m = np.array(mask)
assert (m[:, :64] == 255).all(), "the scene's nodata margin (64 columns) is 255 in the mask"
assert set(np.unique(m[:, 64:])) <= {0, 1}, np.unique(m[:, 64:])
assert str(mask.tag_v2.get(42113)).strip("\x00") == "255", mask.tag_v2.get(42113)  # not the image's 0
PY
then pass "predict on the raster with the checkpoint's bands: a mask on its grid, nodata 255"
else fail "predict on the raster"; cat "$work/err"; fi
# --cog: the same mask as a Cloud-Optimized GeoTIFF (its layout: tests/test_raster_cog.c)
if "$tt" predict "${pred[@]}" --out "$work/cog" --cog 2>"$work/err" &&
   /usr/bin/python3 - "$work/pred/scene_mask.tif" "$work/cog/scene_mask.tif" <<'PY'
import sys
import numpy as np
from PIL import Image
plain, cog = (Image.open(p) for p in sys.argv[1:3])
assert cog.n_frames == 3, cog.n_frames  # 600x520, 300x260, 150x130
assert (np.array(cog) == np.array(plain)).all(), "the full resolution is the plain mask"
assert cog.tag_v2.get(33550) == plain.tag_v2.get(33550)
for frame, size in ((1, (300, 260)), (2, (150, 130))):
    cog.seek(frame)
    assert cog.size == size and cog.tag_v2.get(254) == 1, (cog.size, cog.tag_v2.get(254))
    m = np.array(cog)
    assert (m[:, :64 >> frame] == 255).all(), "the nodata margin stays 255"
    assert set(np.unique(m[:, 64 >> frame:])) <= {0, 1}
PY
then pass "predict --cog: the mask and two overviews, nodata kept"
else fail "predict --cog"; cat "$work/err"; fi
# GDAL's own COG validator and georeference, where GDAL's Python is installed
# (Debian: python3-gdal; not one of tools/deps.sh's packages)
if /usr/bin/python3 -c "from osgeo_utils.samples import validate_cloud_optimized_geotiff" 2>/dev/null; then
  if /usr/bin/python3 -m osgeo_utils.samples.validate_cloud_optimized_geotiff \
       "$work/cog/scene_mask.tif" >"$work/gdal" 2>&1 &&
     /usr/bin/python3 - "$work/cog/scene_mask.tif" "$work/data/images/scene.tif" <<'PY' >>"$work/gdal" 2>&1
import sys
from osgeo import gdal
cog, scene = (gdal.Open(p) for p in sys.argv[1:3])
assert cog.GetGeoTransform() == scene.GetGeoTransform(), (cog.GetGeoTransform(), scene.GetGeoTransform())
assert cog.GetProjection() == scene.GetProjection()
assert cog.GetRasterBand(1).GetOverviewCount() == 2
PY
  then pass "predict --cog: GDAL validates it as a COG, on the scene's grid"
  else fail "predict --cog: GDAL"; cat "$work/gdal"; fi
else
  echo "skip: GDAL's Python (python3-gdal) is not installed: the COG is not validated by GDAL"
fi
expect 1 "no input streams into GeoTIFF (--output png)" -- "$tt" predict "${pred[@]}" \
  --out "$work/pred2" --output png --cog
expect 1 "was trained on 3 bands" -- "$tt" predict "${pred[@]}" --out "$work/pred2" --bands 1,2
expect 1 "band 5 asked for, and it has 4 bands" -- "$tt" predict "${pred[@]}" --out "$work/pred2" --bands 5,2,1

if "$tt" data check --data "$work/data" >"$work/out" 2>"$work/err" &&
   grep -q "1 raster pair" "$work/out" && grep -q "uint16" "$work/out" && grep -q "nodata" "$work/out"
then pass "data check on a raster set"
else fail "data check on a raster set"; cat "$work/out" "$work/err"; fi

if "$tt" plan --data "$work/data" --bands 4,3,2 --out "$work/plan.json" --json >"$work/out" 2>"$work/err" &&
   /usr/bin/python3 - "$work/plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
assert plan["fingerprint"]["raster_bands"] == 3, plan["fingerprint"]
choices = plan["choices"]
assert choices["augment"]["value"] == "flip,rot90", choices["augment"]
assert choices["val-fraction"]["value"] == "0", choices
assert "fg-fraction" in choices, choices  # the scene is mostly cloud: random crops
PY
then pass "plan on a raster set: its bands, flips and turns, no held-out validation"
else fail "plan on a raster set"; cat "$work/out" "$work/err"; fi

# eval on the raster set: the scene streamed, scored as the predicted mask scores
# against the labels (computed here from the two rasters); and the held-out blocks a
# run's validation.txt names scored as its last validation scored them
if "$tt" eval --checkpoint "$work/run/last.safetensors" --data "$work/data" --tile 64x64 --json \
     >"$work/eval.json" 2>"$work/err" &&
   "$tt" eval --checkpoint "$work/two/last.safetensors" --data "$work/data" --tile 64x64 --json \
     --overlap 0.25 --val-list "$work/two/validation.txt" >"$work/held.json" 2>>"$work/err" &&
   /usr/bin/python3 - "$work" <<'PY'
import json, sys
import numpy as np
from PIL import Image
w = sys.argv[1]
truth = np.array(Image.open(w + "/data/masks/scene.tif"))
pred = np.array(Image.open(w + "/pred/scene_mask.tif"))
keep = (truth != 255) & (pred != 255)  # the labels' ignore, the scene's nodata
got = json.load(open(w + "/eval.json"))
assert got["images"] == 1, got
for c, row in enumerate(got["classes"]):
    tp = int(((pred == c) & (truth == c) & keep).sum())
    fp = int(((pred == c) & (truth != c) & keep).sum())
    fn = int(((pred != c) & (truth == c) & keep).sum())
    assert (row["tp"], row["fp"], row["fn"]) == (tp, fp, fn), (c, row, tp, fp, fn)
held = json.load(open(w + "/held.json"))
last = [json.loads(l)["validation"] for l in open(w + "/two/train.jsonl") if '"validation"' in l][-1]
assert held["images"] == 5 and held["mean_dice"] == last["mean_dice"], (held, last)
PY
then pass "eval on a raster set: the scene as its predicted mask scores; the held-out blocks as training scored them"
else fail "eval on a raster set"; cat "$work/err"; fi
expect 1 "band 7 asked for, and it has 4 bands" -- "$tt" train "${run[@]}" --bands 7
expect 1 "--mean and --std are of RGB pixels" -- "$tt" train "${run[@]}" --mean 0.5,0.5,0.5
expect 1 "--val-list: the raster data set" -- "$tt" train "${run[@]}" --val-list "$work/two/validation.txt"
expect 1 "keeps no whole block for training" -- "$tt" train "${run[@]}" --tile 256x256 --val-fraction 0.5
"$build/make_raster" --pair "$work/other" 300 520 4 >/dev/null
cp -r "$work/data" "$work/moved" && cp "$work/other/masks/scene.tif" "$work/moved/masks/scene.tif"
expect 1 "moved/masks/scene.tif: the mask is 300x520 pixels" -- "$tt" train "${run[@]}" --data "$work/moved"
mkdir -p "$work/scenes/images" "$work/scenes/masks"
for d in data other; do
  cp "$work/$d/images/scene.tif" "$work/scenes/images/$d.tif"
  cp "$work/$d/masks/scene.tif" "$work/scenes/masks/$d.tif"
done
# (not --quiet: the validation line on stdout names the classes by number)
if "$tt" train --data "$work/scenes" --tile 64x64 --micro-batch 2 --batch 2 --plan off --steps 1 \
     --val-fraction 0.5 --out "$work/sc" >"$work/out" 2>"$work/err" &&
   grep -q "^validation at step 1: .* over 1 images (class 0 .*, class 1 " "$work/out" &&
   grep -q "^# held out.*: scene data.tif$" "$work/sc/validation.txt" &&
   grep -q '"validation": {"images":1,' "$work/sc/train.jsonl"
then pass "train on two scenes: one held out whole and validated"
else fail "train on two scenes, one held out"; cat "$work/out" "$work/err" "$work/sc/validation.txt"; fi
cp "$work/other/images/scene.tif" "$work/data/images/second.tif"
expect 1 "images/second.tif: no mask for it" -- "$tt" train "${run[@]}"

[ "$failures" = 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all raster checks passed in ${SECONDS}s"

#!/usr/bin/env bash
# Rasters out and rasters scored (issue 43): `predict` into a plain GeoTIFF
# and into a Cloud-Optimized GeoTIFF (--cog) on one scene, wall time, peak
# host memory and file size; then `eval` on a raster set of one scene of
# growing heights, whose peak memory should not grow with the height
# (validation streams a row of tiles at a time).
#
#   tools/bench_raster_val.sh [WIDTH [HEIGHTS]]
#       defaults: 2048 "2048 8192"; predict runs on the last height.
#       BUILD_DIR (default build) and WORK (default a temporary folder,
#       removed) are read from the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
width=${1:-2048}
heights=${2:-2048 8192}
work=${WORK:-$(mktemp -d)}
[ -n "${WORK:-}" ] || trap 'rm -rf "$work"' EXIT
tt=$build/tiletrain
measure() { # LABEL COMMAND...: wall seconds and peak RSS
  /usr/bin/time -f "$1: %e s, peak RSS %M KiB" "${@:2}" 2>&1 >/dev/null | tail -1
}

# a model of the 4 bands trained for two steps: the raster's handling is the point
"$build/make_raster" --pair "$work/train" 600 520 4 >/dev/null
"$tt" train --data "$work/train" --tile 64x64 --micro-batch 2 --batch 2 --steps 2 --plan off \
  --quiet --out "$work/run"
args=(--checkpoint "$work/run/last.safetensors" --tile 256x256)
for h in $heights; do "$build/make_raster" --pair "$work/s$h" "$width" "$h" 4 >/dev/null; done
last=${heights##* }
for kind in plain cog; do
  flag=(); [ "$kind" = cog ] && flag=(--cog)
  measure "predict ${width}x$last $kind" "$tt" predict "${args[@]}" --quiet \
    --input "$work/s$last/images/scene.tif" --out "$work/p_$kind" "${flag[@]}"
  echo "  $(stat -c %s "$work/p_$kind/scene_mask.tif") bytes"
done
for h in $heights; do
  measure "eval ${width}x$h" "$tt" eval "${args[@]}" --data "$work/s$h" --json
done

#!/usr/bin/env bash
# Predicting a raster of any size (issue 43): peak host memory of
# `tiletrain predict` on synthetic GeoTIFF scenes of one width and growing
# heights (it should not grow with the height), and its speed against the
# same model on the same pixels cut into PNG tiles, alternating.
#
#   tools/bench_raster.sh [WIDTH [HEIGHTS [TILE_SIDE]]]
#       defaults: 30000 "4000 30000" 512; the PNG comparison runs on the
#       first height.  BUILD_DIR (default build), WORK (default a temporary
#       folder, removed) and TT_CACHE_DIR are read from the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
width=${1:-30000}
heights=${2:-4000 30000}
side=${3:-512}
work=${WORK:-$(mktemp -d)}
[ -n "${WORK:-}" ] || trap 'rm -rf "$work"' EXIT
tt=$build/tiletrain
measure() { # LABEL COMMAND...: wall seconds and peak RSS
  /usr/bin/time -f "$1: %e s, peak RSS %M KiB" "${@:2}" 2>&1 >/dev/null | tail -1
}

# a small UNet trained for one step: the model's cost is not the point, the
# raster's handling is (a larger model only adds the same device time to both)
"$tt" data synth --out "$work/data" --format folder --count 4 --size 64x64 --classes 3 >/dev/null
"$tt" train --data "$work/data" --out "$work/run" --plan off --tile 64x64 --base-channels 8 \
  --depth 3 --steps 1 --quiet
ckpt=$work/run/last.safetensors
args=(--checkpoint "$ckpt" --tile "${side}x${side}" --overlap 0.25 --quiet)

first=1
for h in $heights; do
  if [ "$first" = 1 ]; then
    mkdir -p "$work/png"
    "$build/make_raster" "$work/scene.tif" "$width" "$h" "$work/png" 2048
  else
    "$build/make_raster" "$work/scene.tif" "$width" "$h"
  fi
  echo "scene ${width}x${h}: $(du -h "$work/scene.tif" | cut -f1) on disk"
  rounds=$([ "$first" = 1 ] && echo 2 || echo 1)
  for r in $(seq "$rounds"); do
    measure "GeoTIFF ${width}x${h}" "$tt" predict "${args[@]}" --input "$work/scene.tif" --out "$work/out"
    if [ "$first" = 1 ]; then
      measure "PNG tiles of 2048 (same pixels)" "$tt" predict "${args[@]}" --input "$work/png" \
        --out "$work/out_png" --no-overlay --min-size 0
    fi
  done
  ls -la "$work/out"
  first=0
done

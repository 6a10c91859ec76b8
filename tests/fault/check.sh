#!/usr/bin/env bash
# Failures in turn at the calls of `train` (validation, checkpoints),
# `predict` (PNG masks and an --rle CSV), `predict` streaming a GeoTIFF
# into a COG mask and probabilities (`raster`) and `mem --measure`
# (issue 44): TT_FAULT=KIND:N makes the Nth
# call of that kind fail as the real failure would (src/core/fault.h): a
# file write (a full disk), a device allocation (device memory running
# out), a kernel launch or Vulkan queue submission (a lost device), a host
# allocation of the library (memory running out), a file read (EIO).  For
# each N:
#   - the command ends, within 120 s, with a non-zero status and an error
#     (never a crash, an abort or a hang), or, where the failure is one it
#     can do without (a report, a cache), goes on to the same result;
#   - no temporary file is left (nor in TT_CACHE_DIR), and every checkpoint,
#     JSON, JSON Lines, PNG and CSV file there is whole;
#   - train resumed from its last checkpoint (or run again when it has
#     none) ends with the uninterrupted run's weights, bit for bit; predict
#     run again writes the uninterrupted run's files, byte for byte.
# A run with TT_FAULT=count first says how many calls of each kind the
# command makes; a kind with up to POINTS calls is walked whole, one with
# more at POINTS places spread over its calls (first and last included).
# The run: 3 steps with a checkpoint after each, a validation (of the
# images a --val-list names) after the second, its own tile cache, --algo
# direct (the autotuner drops a candidate whose launch fails, so a fault
# there would be absorbed).  Its reads include the caches of TT_CACHE_DIR
# that the uninterrupted run filled (Vulkan's pipeline cache; OpenCL's
# program binaries where POCL_KERNEL_CACHE=0) and train.jsonl read back for
# the report: a cache or the report failing is one the run can do without.
# usage: tests/fault/check.sh BUILD_DIR
#   BACKENDS  (default "opencl vulkan", or opencl alone where there is no Vulkan device)
#   COMMANDS  (default "train predict raster mem")
#   KINDS     (default "write alloc launch submit host read")
#   POINTS    (default 24; 0: every call)
source "$(dirname "$0")/lib.sh"
points=${POINTS:-24}
backends=${BACKENDS:-opencl vulkan}
[ -n "${BACKENDS:-}" ] || "$tt" devices 2>/dev/null | grep -q "^ *\*\? *Vulkan" || backends=opencl

"$tt" data synth --out "$work/data" --format kaggle-rle --count 6 --size 64x96 --classes 2 \
  --seed 3 >/dev/null || { echo "FAIL: data synth"; exit 1; }
"$(dirname "$tt")/make_raster" "$work/scene.tif" 300 200 >/dev/null || { echo "FAIL: make_raster"; exit 1; }
(cd "$work/data/train_images" && printf '%s\n' *) | sed -n '2p;5p' >"$work/val.txt" # read by --val-list
model=(--tile 32x32 --micro-batch 2 --accum 1 --base-channels 4 --depth 2 --groups 2 --algo direct)
train=(train --data "$work/data" --plan off "${model[@]}" --steps 3 --val-list "$work/val.txt"
       --val-every 2 --checkpoint-every 1 --no-augment --seed 3 --quiet)

# args COMMAND BACKEND DIR: the command line writing under DIR
args() {
  case $1 in
    train) echo "${train[*]} --backend $2 --out $3/run --cache-dir $3/tiles" ;;
    predict) echo "predict --checkpoint $work/ref_$2/run/last.safetensors --input $work/data/train_images
                   --tile 32x32 --algo direct --quiet --backend $2 --out $3/pred --rle $3/pred/rows.csv" ;;
    raster) echo "predict --checkpoint $work/ref_$2/run/last.safetensors --input $work/scene.tif
                  --tile 32x32 --algo direct --quiet --backend $2 --out $3/geo --cog --probabilities" ;;
    mem) echo "mem --data $work/data ${model[*]} --measure --backend $2 --cache-dir $3/tiles" ;;
  esac
}
# go COMMAND BACKEND DIR [more args]: runs it (stdout dropped, stderr to $work/err), sets rc
go() {
  local cmd=$1 backend=$2 dir=$3
  shift 3
  # shellcheck disable=SC2046 # the arguments hold no spaces
  timeout 120 "$tt" $(args "$cmd" "$backend" "$dir") "$@" >/dev/null 2>"$work/err"
  rc=$?
}

# same COMMAND BACKEND: the run under $work/f ended with the reference's result
same() {
  case $1 in
    train) $py "$here/../cli/same_checkpoint.py" --tol 0 "$work/ref_$2/run/last.safetensors" \
             "$work/f/run/last.safetensors" >>"$work/err" 2>&1 ;;
    predict) diff -r "$work/ref_$2/pred" "$work/f/pred" >>"$work/err" 2>&1 ;;
    raster) diff -r "$work/ref_$2/geo" "$work/f/geo" >>"$work/err" 2>&1 ;;
  esac
}
# again COMMAND BACKEND: the run after a failure (train: resumed from its
# last checkpoint), and the same result
again() {
  local resume=()
  [ "$1" = mem ] && return 0
  [ "$1" = train ] && [ -f "$work/f/run/last.safetensors" ] && resume=(--resume "$work/f/run/last.safetensors")
  go "$1" "$2" "$work/f" "${resume[@]}"
  [ "$rc" = 0 ] && same "$1" "$2"
}

# check COMMAND BACKEND KIND N: one fault, and the run after it
check() {
  local cmd=$1 backend=$2 kind=$3 n=$4 what first
  rm -rf "$work/f" && mkdir "$work/f"
  TT_FAULT=$kind:$n go "$cmd" "$backend" "$work/f"
  cp "$work/err" "$work/err1"
  first=$rc
  if [ "$rc" -ge 124 ]; then fail "$cmd $backend $kind $n: hung or killed (exit $rc)"; cat "$work/err1"; return; fi
  whole "$work/f" "${TT_CACHE_DIR:-/nonexistent}" >"$work/whole" 2>&1 ||
    { fail "$cmd $backend $kind $n: a file is not whole"; cat "$work/whole"; }
  what=$(grep -m1 "tiletrain" "$work/err1" | cut -c1-110)
  if [ "$rc" != 0 ] && ! grep -q "error: " "$work/err1"; then fail "$cmd $backend $kind $n: exit $rc and no error"; cat "$work/err1"; return; fi
  if [ "$rc" != 0 ] && ! again "$cmd" "$backend"; then
    fail "$cmd $backend $kind $n: the run after the failure"; cat "$work/err1" "$work/err"; return
  fi
  if [ "$rc" = 0 ] && ! same "$cmd" "$backend"; then
    fail "$cmd $backend $kind $n: went on to another result"; cat "$work/err1" "$work/err"; return
  fi
  [ -n "${VERBOSE:-}" ] && echo "ok:   $cmd $backend $kind $n (exit $first): ${what:-no message}"
  return 0
}

summary=()
for backend in $backends; do
  mkdir "$work/ref_$backend"
  go train "$backend" "$work/ref_$backend"
  [ "$rc" = 0 ] || { fail "train on $backend, uninterrupted"; cat "$work/err"; continue; }
  go predict "$backend" "$work/ref_$backend"
  [ "$rc" = 0 ] || { fail "predict on $backend, uninterrupted"; cat "$work/err"; continue; }
  commands=${COMMANDS:-train predict raster mem}
  if [[ " $commands " == *" raster "* ]]; then
    go raster "$backend" "$work/ref_$backend"
    [ "$rc" = 0 ] || { fail "predict of a GeoTIFF on $backend, uninterrupted"; cat "$work/err"; continue; }
  fi
  for cmd in $commands; do
    rm -rf "$work/count" && mkdir "$work/count"
    TT_FAULT=count go "$cmd" "$backend" "$work/count"
    counts=$(grep -m1 "^TT_FAULT counts:" "$work/err")
    [ -n "$counts" ] || { fail "$cmd on $backend: no TT_FAULT counts"; cat "$work/err"; continue; }
    line="$cmd/$backend:"
    for kind in ${KINDS:-write alloc launch submit host read}; do
      total=$(echo "$counts" | sed -n "s/.* $kind \([0-9]*\).*/\1/p")
      [ "${total:-0}" -ge 1 ] || continue
      walked=0
      for n in $(spread "$total" "$points"); do
        check "$cmd" "$backend" "$kind" "$n"
        walked=$((walked + 1))
      done
      line="$line $kind $walked/$total"
    done
    echo "$line"
    summary+=("$line")
  done
done
[ "$failures" = 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "faults walked, each a clear error, whole files and the same result after:"
printf '  %s\n' "${summary[@]}"

#!/usr/bin/env bash
# ONNX export as a user meets it (CTest runs it as test_export):
#   - every model kind (src/train/train_options.h's TT_MODEL_CHOICES, and the
#     plain UNet with batch norm too) exported at 64x64 and run in onnxruntime
#     by --verify: its logits within 1e-4 of tiletrain's (max |diff| / max
#     |logit|) on a random image and a real one; the largest ratio per kind
#     is printed;
#   - batch norms kept instead of folded, --dynamic-size (verified at two
#     sizes and as a batch of 2), --with-sigmoid and --with-softmax, opsets 7
#     and 13; a checkpoint `train` wrote exported at its training tile;
#   - bad input gets an error naming the thing and what to do, exit 1 or 2,
#     and no file, not even a temporary OUT.tmp.*: an unknown model kind, a checkpoint with
#     no metadata, an opset too old for an op (Resize) or out of range, an
#     unwritable output, --size missing (a checkpoint with no tile), both heads.
# TT_EXPORT_KINDS="unet fpn-resnet18" limits the first part to those kinds,
# TT_EXPORT_JOBS (default 2) how many run at once.
# The checkpoints are made by make_checkpoint (random weights, batch norm
# statistics drawn away from 0 and 1), not trained.  onnxruntime comes from
# PyPI into BUILD_DIR/venv (tools/venv.sh); exit 77 (skipped) only when PyPI
# cannot be reached or the build has no ONNX export (no protobuf-c).
# usage: tests/export/check.sh BUILD_DIR
set -uo pipefail
build=$(cd "${1:?usage: check.sh BUILD_DIR}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
tt=$build/tiletrain
make=$build/tests/make_checkpoint
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: [${SECONDS}s] $*"; failures=$((failures + 1)); }
pass() { echo "ok:   [${SECONDS}s] $*"; }

"$make" "$work/unet.safetensors" unet 3 || { echo "FAIL: make_checkpoint"; exit 1; }
if ! "$tt" export --checkpoint "$work/unet.safetensors" --onnx "$work/probe.onnx" --size 64x64 >/dev/null 2>"$work/err"; then
  if grep -q "built without ONNX export" "$work/err"; then
    cat "$work/err"
    echo "SKIP: this build has no ONNX export (the message above says how to get it)"
    exit 77
  fi
  cat "$work/err"
  fail "export of the plain UNet"
fi
"$root/tools/venv.sh" "$build/venv"
case $? in
  0) ;;
  77) echo "SKIP: PyPI is unreachable, so onnxruntime could not be installed into $build/venv"; exit 77 ;;
  *) echo "FAIL: tools/venv.sh $build/venv"; exit 1 ;;
esac
"$tt" data synth --out "$work/data" --format folder --count 4 --size 96x96 --classes 2 --seed 3 >/dev/null ||
  fail "data synth"
image=$work/data/images/synth_00000.png
"$tt" export --help >"$work/help" 2>&1 # not piped: grep -q's early exit would SIGPIPE it
if grep -q "^example" "$work/help"; then pass "export --help has an example"
else fail "tiletrain export --help has no example"; fi

# export_ok NAME CHECKPOINT ARGS...: export --verify passes; prints the largest ratio
export_ok() {
  local name=$1 checkpoint=$2
  shift 2
  if "$tt" export --checkpoint "$checkpoint" --onnx "$work/$name.onnx" --verify --image "$image" "$@" \
    >"$work/out" 2>"$work/err"; then
    pass "$name $*: $(sed -n 's/^largest |diff| \/ scale \([^ ]*\).*/largest |diff|\/scale \1/p' "$work/out" | sort -g -k2 | tail -1)"
  else
    fail "$name $*"
    cat "$work/out" "$work/err"
  fi
  rm -f "$work/$name.onnx"
}

# every kind, or those TT_EXPORT_KINDS names (by hand, while working on one)
kinds=$(sed -n '/define TT_MODEL_CHOICES/,/[^\\]$/p' "$root/src/train/train_options.h" |
  grep -o '"[^"]*"' | tr -d '"\n' | tr '|' ' ')
[ "$(echo $kinds | wc -w)" -ge 37 ] || fail "only $(echo $kinds | wc -w) model kinds read from train_options.h"
kinds=${TT_EXPORT_KINDS:-$kinds}
# one_kind KIND: its checkpoint, export --verify (direct convolutions: no
# autotuning on a fresh cache; the cases after this loop run auto), its
# line into $work/kind.KIND.log
one_kind() {
  local kind=$1 base=$work/kind.$1
  if ! "$make" "$base.safetensors" "$kind" 2 >"$base.out" 2>&1; then
    { echo "FAIL: make_checkpoint $kind"; cat "$base.out"; } >"$base.log"
  elif "$tt" export --checkpoint "$base.safetensors" --onnx "$base.onnx" --verify --image "$image" \
    --size 64x64 --algo direct >"$base.out" 2>&1; then
    echo "ok:   $kind: $(sed -n 's/^largest |diff| \/ scale \([^ ]*\).*/largest |diff|\/scale \1/p' "$base.out")" >"$base.log"
  else
    { echo "FAIL: $kind"; cat "$base.out"; } >"$base.log"
  fi
  rm -f "$base.safetensors" "$base.onnx" "$base.out"
}
jobs=${TT_EXPORT_JOBS:-2}
for kind in $kinds; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  one_kind "$kind" &
done
wait
for kind in $kinds; do
  cat "$work/kind.$kind.log" 2>/dev/null || echo "FAIL: $kind left no log"
  grep -q "^ok:" "$work/kind.$kind.log" 2>/dev/null || failures=$((failures + 1))
done
echo "[${SECONDS}s] every kind done"
"$make" "$work/unet-bn.safetensors" unet 3 batch && export_ok unet-bn "$work/unet-bn.safetensors" --size 64x64
"$make" "$work/dl.safetensors" deeplabv3plus-resnet18 3 || fail "make_checkpoint deeplabv3plus-resnet18"
"$make" "$work/fpn.safetensors" fpn-resnet18 3 || fail "make_checkpoint fpn-resnet18"
export_ok unet-bn-kept "$work/unet-bn.safetensors" --size 64x64 --batch-norm keep
export_ok deeplab-kept "$work/dl.safetensors" --size 64x64 --batch-norm keep
export_ok deeplab-dynamic "$work/dl.safetensors" --dynamic-size --with-softmax
# the random and the real image again as one batch of 2
grep -q "^batch of 2" "$work/out" || fail "deeplab --dynamic-size was not verified as a batch of 2"
export_ok fpn-dynamic "$work/fpn.safetensors" --dynamic-size --size 64x96 --with-sigmoid
# verified at 64x96 and, a tile unit (32) taller, at 96x96
grep -q "random 96x96" "$work/out" || fail "fpn --dynamic-size was not verified at a second size"
export_ok fpn-opset13 "$work/fpn.safetensors" --size 64x64 --opset 13
export_ok unet-opset7 "$work/unet.safetensors" --size 64x64 --opset 7
# a checkpoint `train` wrote: its tile (metadata "tile") is the default size
if "$tt" train --data "$work/data" --out "$work/run" --tile 32x64 --base-channels 8 --depth 2 \
  --steps 1 --plan off >"$work/train.log" 2>&1; then
  export_ok trained "$work/run/last.safetensors"
  grep -q "^random 32x64" "$work/out" || fail "export of a trained checkpoint did not take its tile 32x64"
else
  fail "train --steps 1"; cat "$work/train.log"
fi

# refused STATUS PATTERN OUT -- ARGS...: exit STATUS, PATTERN on stderr, no OUT nor OUT.tmp.*
refused() {
  local want=$1 pattern=$2 out=$3
  shift 4
  "$tt" export "$@" >"$work/out" 2>"$work/err"
  local got=$?
  if [ "$got" != "$want" ]; then fail "export $* exited $got, not $want"; cat "$work/err"; return; fi
  if ! grep -qF -- "$pattern" "$work/err"; then fail "export $*: no '$pattern' in:"; cat "$work/err"; return; fi
  if [ -e "$out" ] || compgen -G "$out.tmp*" >/dev/null; then fail "export $*: left $out or a temporary $out.tmp* behind"; return; fi
  pass "refused: $(head -c 160 "$work/err")"
}
"$make" --set "$work/unet.safetensors" "$work/vgg.safetensors" model '{"kind": "vgg16", "classes": 2}'
"$make" --bare "$work/bare.safetensors" unet 2
out=$work/out.onnx
refused 1 "model 'vgg16' is unknown: use unet" "$out" -- --checkpoint "$work/vgg.safetensors" --onnx "$out" --size 64x64
refused 1 'no "model" metadata' "$out" -- --checkpoint "$work/bare.safetensors" --onnx "$out" --size 64x64
refused 1 "--opset 12 is too old for Resize" "$out" -- --checkpoint "$work/fpn.safetensors" --onnx "$out" --size 64x64 --opset 12
refused 1 "--opset 12 is too old for Softmax" "$out" -- --checkpoint "$work/unet.safetensors" --onnx "$out" --size 64x64 --opset 12 --with-softmax
refused 1 "--opset 6 is out of range: give 7 to 21" "$out" -- --checkpoint "$work/unet.safetensors" --onnx "$out" --size 64x64 --opset 6
refused 1 "cannot create '$work/none/out.onnx.tmp." "$work/none/out.onnx" -- --checkpoint "$work/unet.safetensors" --onnx "$work/none/out.onnx" --size 64x64
mkdir "$work/locked" && chmod 500 "$work/locked"
if [ "$(id -u)" != 0 ]; then
  refused 1 "cannot create '$work/locked/out.onnx.tmp." "$work/locked/out.onnx" -- --checkpoint "$work/unet.safetensors" --onnx "$work/locked/out.onnx" --size 64x64
fi
refused 2 "give --size HxW" "$out" -- --checkpoint "$work/unet.safetensors" --onnx "$out"
refused 2 "--with-sigmoid and --with-softmax: give one" "$out" -- --checkpoint "$work/unet.safetensors" --onnx "$out" --size 64x64 --with-sigmoid --with-softmax
refused 1 "cannot run $work/no-python" "$out" -- --checkpoint "$work/unet.safetensors" --onnx "$out" --size 64x64 --verify --python "$work/no-python"
# a Python without onnxruntime: the pip command (where the system's has none)
if [ -x /usr/bin/python3 ] && ! /usr/bin/python3 -c 'import onnxruntime' 2>/dev/null; then
  refused 1 "-m pip install onnxruntime numpy" "$out" -- --checkpoint "$work/unet.safetensors" --onnx "$out" --size 64x64 --verify --python /usr/bin/python3
fi

if [ "$failures" -ne 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "all passed in ${SECONDS}s"

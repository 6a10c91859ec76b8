#!/usr/bin/env bash
# The ResNet-encoder UNet and FPN through the command line (CTest runs it as
# test_cli_resnet, beside test_cli):
#   - with every batch norm frozen, micro-batch 2 x accum 3 is 6 x 1, for
#     unet-resnet18 and for fpn-resnet18 with its Dropout2d;
#   - a fine-tuning run (--encoder-lr, --freeze-encoder-steps) resumed with
#     --checkpointing goes on bit for bit;
#   - --freeze-bn --checkpointing is bit for bit the run without;
#   - mem's estimate for unet-resnet34 is its measurement, with
#     --checkpointing and without; for unet-resnet18 in bf16, and with
#     --checkpointing on Vulkan (lavapipe in CI).
# usage: tests/cli/resnet_check.sh BUILD_DIR
set -uo pipefail
tt=$(cd "${1:?usage: resnet_check.sh BUILD_DIR}" && pwd)/tiletrain
. "$(dirname "$0")/lib.sh"

"$tt" data synth --out "$work/data" --format kaggle-rle --count 6 --size 64x96 --classes 2 --seed 3 >/dev/null ||
  fail "data synth"

# with every batch norm frozen no statistic depends on the micro-batch: 2 x 3
# is 6 x 1 (the first window's gradients, to the float rounding a
# cancelling sum of this model has: within 1e-4 of the largest); a resume
# with an encoder parameter group frozen for the first step continues
# bit for bit
resnet=(--data "$work/data" --tile 32x32 --model unet-resnet18 --backend opencl --quiet
        --no-augment --seed 2 --algo im2col_gemm --plan off)
if "$tt" train "${resnet[@]}" --freeze-bn --micro-batch 2 --accum 3 --steps 1 --out "$work/ra" \
     --save-grads "$work/ra/g.safetensors" 2>"$work/err" &&
   "$tt" train "${resnet[@]}" --freeze-bn --micro-batch 6 --accum 1 --steps 1 --out "$work/rb" \
     --save-grads "$work/rb/g.safetensors" 2>>"$work/err" &&
   /usr/bin/python3 "$(dirname "$0")/same_checkpoint.py" --tol 1e-4 --scale file \
     "$work/ra/g.safetensors" "$work/rb/g.safetensors" >"$work/same" 2>&1
then pass "unet-resnet18 --freeze-bn: micro-batch 2 x accum 3 = 6 x 1: $(head -1 "$work/same")"
else fail "unet-resnet18 --freeze-bn accumulation"; cat "$work/err" "$work/same"; fi
# FPN's Dropout2d: each crop draws its own masks, so 2 x 3 is 6 x 1 with
# dropout too (the encoder's norms frozen, the decoder's group norms per image)
fpn=(--data "$work/data" --tile 32x32 --model fpn-resnet18 --backend opencl --quiet
     --no-augment --seed 2 --algo im2col_gemm --plan off --freeze-bn)
if "$tt" train "${fpn[@]}" --micro-batch 2 --accum 3 --steps 1 --out "$work/fa" \
     --save-grads "$work/fa/g.safetensors" 2>"$work/err" &&
   "$tt" train "${fpn[@]}" --micro-batch 6 --accum 1 --steps 1 --out "$work/fb" \
     --save-grads "$work/fb/g.safetensors" 2>>"$work/err" &&
   /usr/bin/python3 "$(dirname "$0")/same_checkpoint.py" --tol 1e-4 --scale file \
     "$work/fa/g.safetensors" "$work/fb/g.safetensors" >"$work/same" 2>&1
then pass "fpn-resnet18 --freeze-bn, dropout per crop: micro-batch 2 x accum 3 = 6 x 1: $(head -1 "$work/same")"
else fail "fpn-resnet18 dropout accumulation"; cat "$work/err" "$work/same"; fi
# the resumed side recomputes what --checkpointing drops: the same bits as
# the run that keeps everything
# (on 64x64: on 32x32 layer4's batch norms would see one value a channel
# in a micro-batch of one)
tune=(--encoder-lr 0.1x --freeze-encoder-steps 1 --micro-batch 2 --tile 64x64)
if "$tt" train "${resnet[@]}" "${tune[@]}" --steps 2 --checkpoint-every 1 --out "$work/rc" 2>"$work/err" &&
   "$tt" train "${resnet[@]}" "${tune[@]}" --steps 1 --checkpointing --out "$work/rd" 2>>"$work/err" &&
   "$tt" train "${resnet[@]}" "${tune[@]}" --steps 2 --checkpointing --out "$work/rd" \
     --resume "$work/rd/last.safetensors" 2>>"$work/err" &&
   /usr/bin/python3 "$(dirname "$0")/same_checkpoint.py" --tol 0 "$work/rc/last.safetensors" \
     "$work/rd/last.safetensors" >"$work/same" 2>&1
then pass "unet-resnet18 --encoder-lr 0.1x --freeze-encoder-steps 1: 2 steps = 1 (frozen) + resume 1 (unfrozen) with --checkpointing, bit for bit"
else fail "unet-resnet18 fine-tuning resume with --checkpointing"; cat "$work/err" "$work/same"; fi
expect 1 "is for a model over an encoder" -- "$tt" train --data "$work/data" --out "$work/r0" --freeze-bn --steps 1
expect 1 "multiples of 32" -- "$tt" train --data "$work/data" --out "$work/r0" --model unet-resnet18 \
  --tile 48x48 --steps 1
# every norm frozen: what checkpointing makes again is normed with the
# running statistics (the run without is the 2 x 3 one above)
if "$tt" train "${resnet[@]}" --freeze-bn --micro-batch 2 --accum 3 --steps 1 --checkpointing \
     --out "$work/rh" 2>"$work/err" &&
   /usr/bin/python3 "$(dirname "$0")/same_checkpoint.py" --tol 0 "$work/ra/last.safetensors" \
     "$work/rh/last.safetensors" >"$work/same" 2>&1
then pass "unet-resnet18 --freeze-bn --checkpointing: micro-batch 2 x accum 3, bit for bit the run without"
else fail "unet-resnet18 --freeze-bn --checkpointing"; cat "$work/err" "$work/same"; fi
# the plan the estimate makes on the dry backend is the one the run places
for ckpt in "" --checkpointing; do
  if "$tt" mem --model unet-resnet34 --tile 32x64 --micro-batch 2 --algo im2col_gemm $ckpt \
       --measure --json >"$work/rmem" 2>"$work/err" &&
     measured_same "$work/rmem"; then
    pass "mem --model unet-resnet34 ${ckpt:-(no checkpointing)} --measure: the estimate equals the measurement"
  else fail "mem --model unet-resnet34 $ckpt --measure"; cat "$work/err" "$work/rmem"; fi
done

# in bf16 too, the estimate is the measurement
if "$tt" mem --model unet-resnet18 --tile 64x64 --micro-batch 2 --classes 2 --precision bf16 \
     --measure >"$work/mem" 2>"$work/err" &&
   same_peak "$work/mem"
then pass "mem --model unet-resnet18 --precision bf16 --measure: the estimate is the measurement"
else fail "mem --model unet-resnet18 --precision bf16 --measure"; cat "$work/mem" "$work/err"; fi
# the ResNet-encoder UNet's window with what --checkpointing makes again,
# on Vulkan (mem --measure runs it on the device; test_resnet_unet_vulkan
# checks its gradients, the backend switches above train's loop there)
if "$tt" devices --backend vulkan >/dev/null 2>&1; then
  if "$tt" mem --model unet-resnet18 --backend vulkan --tile 32x32 --micro-batch 2 \
       --algo im2col_gemm --checkpointing --measure --json >"$work/vkrmem" 2>"$work/err" &&
     measured_same "$work/vkrmem"; then
    pass "unet-resnet18 --checkpointing --backend vulkan: a window, mem --measure equals the estimate"
  else fail "unet-resnet18 --checkpointing --backend vulkan"; cat "$work/err" "$work/vkrmem"; fi
else
  echo "skip: no Vulkan device (tiletrain devices --backend vulkan)"
fi

[ "$failures" = 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all ResNet command-line checks passed"

#!/usr/bin/env bash
# Host allocations failing in turn while each kind of model is built and
# estimated (mem on the dry backend, no device; issue 44): the command ends
# with a clear error and a non-zero status, never a crash.  A model's builder
# (src/model/*.c) reads the tensors it made; one that found no memory must
# not be read as if it had.  For each kind: the first FIRST calls (default
# 40; the builders run there) one by one, then POINTS (default 4) spread
# over the rest; POINTS=0 walks every call.
# usage: tests/fault/models.sh BUILD_DIR
#   KINDS_OF_MODEL (default: the plain UNet and one per decoder and encoder family)
source "$(dirname "$0")/lib.sh"
first=${FIRST:-40}
points=${POINTS:-4}
kinds=${KINDS_OF_MODEL:-unet unet-resnet18 fpn-resnet50 linknet-resnext50_32x4d deeplabv3plus-efficientnet-b0}
summary=()
for kind in $kinds; do
  run=(mem --model "$kind" --tile 64x64 --micro-batch 2 --classes 2)
  total=$(TT_FAULT=count "$tt" "${run[@]}" 2>&1 >/dev/null | sed -n 's/^TT_FAULT counts:.* host \([0-9]*\).*/\1/p')
  [ "${total:-0}" -ge 1 ] || { fail "$kind: no TT_FAULT counts"; continue; }
  if [ "$points" = 0 ] || [ "$total" -le "$first" ]; then calls=$(seq 1 "$total")
  else calls="$(seq 1 "$first") $(spread $((total - first)) "$points" | tr ' ' '\n' | awk -v f="$first" '{print $1 + f}')"
  fi
  walked=0
  for n in $calls; do
    TT_FAULT=host:$n timeout 60 "$tt" "${run[@]}" >/dev/null 2>"$work/err"
    rc=$?
    walked=$((walked + 1))
    if [ "$rc" -ge 124 ]; then fail "$kind host $n: crashed, hung or killed (exit $rc)"; cat "$work/err"
    elif [ "$rc" != 0 ] && ! grep -q "error: " "$work/err"; then fail "$kind host $n: exit $rc and no error"; cat "$work/err"
    fi
  done
  summary+=("$kind: host $walked/$total")
done
[ "$failures" = 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "host allocations failed in turn while building models, each a clear error:"
printf '  %s\n' "${summary[@]}"

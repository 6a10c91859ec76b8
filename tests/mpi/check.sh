#!/usr/bin/env bash
# Data parallel over MPI on PoCL (CTest runs it as test_mpi), one PoCL
# thread per rank:
#   - 2 ranks x micro-batch 2 x accum 3 against 1 process x micro-batch 2 x
#     accum 6 (group norm, ignore regions of a different size in every
#     mask): the first window's gradients within 1e-6 relative, the
#     weights and AdamW state after 3 steps within 1e-6 of the file's
#     largest value (a parameter that started at zero has no scale of its
#     own: a bias at 3e-3 differs by 3e-8 after three steps); the
#     ranks' weights compared at every step (--check-weights-every 1);
#   - the same with --loss ce+0.5*dice:reduce=window+lovasz+focal and class
#     weights: Dice's window sums over the ranks, gradients within 1e-6 of
#     the file's largest value;
#   - a planned run (--plan auto): rank 0's recipe on every rank;
#   - the same over TCP (--mca btl tcp,self), the path between machines;
#   - --sync-bn: 2 ranks x micro-batch 2 against 1 process x micro-batch 4
#     (batch norm over the same images): gradients within 1e-6 of the
#     largest (a bias before batch norm has only rounding noise for a
#     gradient) and the running statistics after the step;
#   - fpn-resnet18 with its encoder's norms frozen: 2 ranks x micro-batch 2
#     x accum 2 against 1 process x micro-batch 2 x accum 4, gradients
#     within 1e-6 of the file's largest (Dropout2d's masks are each crop's
#     own, whichever rank draws it);
#   - 2 steps + --resume 2 more is bit-identical to 4 steps (same world
#     size); a 2-rank checkpoint resumes in one process;
#   - a bad image on one rank stops both, naming the rank and the cause;
#   - rank 1 killed mid-run: mpirun stops the other within a bounded time,
#     naming the rank, and the last checkpoint resumes.
# usage: tests/mpi/check.sh BUILD_DIR
set -uo pipefail
tt=$(cd "${1:?usage: check.sh BUILD_DIR}" && pwd)/tiletrain
here=$(cd "$(dirname "$0")" && pwd)
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3 # Debian's, with PIL (tools/deps.sh)
same="$py $here/../cli/same_checkpoint.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok:   $*"; }
export POCL_MAX_PTHREAD_COUNT=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi() { timeout 300 mpirun --oversubscribe --allow-run-as-root -np 2 "$@"; }
cd "$work" || exit 1

"$tt" data synth --out data --format folder --count 8 --size 80x112 --seed 3 >/dev/null
$py "$here/ignore_regions.py" data
# one convolution algorithm: with auto, each process times its own choice
# (Winograd rounds differently from im2col + GEMM), which is not under test
common=(--data data --cache-dir "$work/cache" --tile 64x64 --base-channels 8 --depth 2
        --backend opencl --quiet --no-augment --seed 5 --algo im2col_gemm --plan off)
# two groups of four channels: a convolution bias before group norm then has
# a gradient, not only rounding noise (one channel per group cancels it)
group=("${common[@]}" --norm group --groups 2)

# --- the global window: gradients, then weights after 3 AdamW steps ---
"$tt" train "${group[@]}" --micro-batch 2 --accum 6 --steps 1 --out one1 --save-grads one1/g.safetensors
mpi "$tt" train "${group[@]}" --micro-batch 2 --accum 3 --steps 1 --out two1 --save-grads two1/g.safetensors
if $same one1/g.safetensors two1/g.safetensors --tol 1e-6; then pass "gradients of 2 ranks = 1 process (1e-6)"
else fail "gradients of 2 ranks differ from 1 process"; fi
"$tt" train "${group[@]}" --micro-batch 2 --accum 6 --steps 3 --out one3
mpi "$tt" train "${group[@]}" --micro-batch 2 --accum 3 --steps 3 --out two3 --check-weights-every 1 2> two3.err
if [ -s two3/last.safetensors ] && $same one3/last.safetensors two3/last.safetensors --tol 1e-6 --scale file; then
  pass "weights after 3 steps: 2 ranks = 1 process; every rank's weights the same at every step"
else fail "3 steps on 2 ranks"; cat two3.err; fi
grep -q "rank 1 of 2 .*trains on" two3.err && pass "every rank names its device" || fail "no device line per rank"

# --- the loss terms over the global window: Dice's sums over the ranks
# (two passes), Lovász and focal per image / pixel, class weights ---
losses=(--loss "ce+0.5*dice:reduce=window+lovasz+focal" --class-weights 1,2,0.5,1,3)
"$tt" train "${group[@]}" "${losses[@]}" --micro-batch 2 --accum 6 --steps 1 --out lone1 --save-grads lone1/g.safetensors
mpi "$tt" train "${group[@]}" "${losses[@]}" --micro-batch 2 --accum 3 --steps 1 --out ltwo1 --save-grads ltwo1/g.safetensors
if $same lone1/g.safetensors ltwo1/g.safetensors --tol 1e-6 --scale file; then
  pass "every loss term, Dice over the window: gradients of 2 ranks = 1 process (1e-6)"
else fail "loss terms over 2 ranks differ from 1 process"; fi

# --- validation on rank 0 while the other waits; best.safetensors by Dice ---
mpi "$tt" train "${group[@]}" --micro-batch 2 --accum 1 --steps 2 --val-fraction 0.25 --val-every 1 --out val 2> val.err
if [ -s val/best.safetensors ] && [ "$(grep -c '"mean_dice"' val/train.jsonl)" -ge 2 ]; then
  pass "validation during a 2-rank run (rank 0 validates, best.safetensors)"
else fail "validation on 2 ranks"; cat val.err; fi

# --- a planned run: every rank trains rank 0's plan (each planned for its
# own device; the ranks' weights compared at every step) ---
mpi "$tt" train --data data --cache-dir "$work/cache" --backend opencl --quiet --seed 5 \
    --algo im2col_gemm --mem-limit 8MiB --steps 2 --out planned --check-weights-every 1 2> planned.err
if [ -s planned/last.safetensors ] && [ -s planned/plan.json ] && grep -q '"plan":"auto"\|"plan": *"auto"' planned/train.jsonl; then
  pass "a planned 2-rank run: one recipe on both ranks (plan.json, weights equal every step)"
else fail "planned 2-rank run"; cat planned.err; fi

mpi --mca btl tcp,self "$tt" train "${group[@]}" --micro-batch 2 --accum 3 --steps 3 --out tcp3 --check-weights-every 1
if [ -s tcp3/last.safetensors ] && $same one3/last.safetensors tcp3/last.safetensors --tol 1e-6 --scale file; then
  pass "over TCP: the same weights"
else fail "over TCP"; fi

# --- synchronised batch norm: 2 x 2 images = one micro-batch of 4 ---
# (alone, --sync-bn takes the same host arithmetic, so the two runs round
# alike; against plain batch norm a fused ReLU's mask may flip where a
# normalised value rounds across zero)
batch=("${common[@]}" --norm batch --sync-bn)
"$tt" train "${batch[@]}" --micro-batch 4 --accum 3 --steps 1 --out bn1 --save-grads bn1/g.safetensors
mpi "$tt" train "${batch[@]}" --micro-batch 2 --accum 3 --steps 1 --out bn2 --save-grads bn2/g.safetensors
if $same bn1/g.safetensors bn2/g.safetensors --tol 1e-6 --scale file &&
   $same bn1/last.safetensors bn2/last.safetensors --tol 1e-6 --only running_ --no-counters; then
  pass "--sync-bn: 2 ranks x 2 = 1 process x 4 (gradients, running statistics)"
else fail "--sync-bn"; fi

# --- a model over an encoder, with dropout: each crop's masks on any rank ---
fpn=(--data data --cache-dir "$work/cache" --tile 64x64 --model fpn-resnet18 --backend opencl
     --quiet --no-augment --seed 5 --algo im2col_gemm --plan off --freeze-bn)
"$tt" train "${fpn[@]}" --micro-batch 2 --accum 4 --steps 1 --out fpn1 --save-grads fpn1/g.safetensors
mpi "$tt" train "${fpn[@]}" --micro-batch 2 --accum 2 --steps 1 --out fpn2 --save-grads fpn2/g.safetensors
if $same fpn1/g.safetensors fpn2/g.safetensors --tol 1e-6 --scale file; then
  pass "fpn-resnet18, dropout per crop: gradients of 2 ranks = 1 process (1e-6)"
else fail "fpn-resnet18 on 2 ranks differs from 1 process"; fi

# --- resume: bit-identical with the same world size; another world size goes on ---
mpi "$tt" train "${group[@]}" --micro-batch 2 --accum 2 --steps 4 --checkpoint-every 2 --out straight
mpi "$tt" train "${group[@]}" --micro-batch 2 --accum 2 --steps 2 --out halves
cp halves/last.safetensors half2.safetensors
mpi "$tt" train "${group[@]}" --micro-batch 2 --accum 2 --steps 4 --out halves --resume half2.safetensors
if $same straight/last.safetensors halves/last.safetensors --tol 0; then pass "2 + resume 2 = 4 steps, bit for bit"
else fail "resume on 2 ranks is not bit-identical"; fi
if "$tt" train "${group[@]}" --micro-batch 2 --accum 2 --steps 3 --out alone --resume half2.safetensors 2> alone.err &&
   grep -q "written by 2 ranks, continued by 1" alone.err; then pass "a 2-rank checkpoint resumes in one process"
else fail "2-rank checkpoint in one process"; cat alone.err; fi

# --- a bad image on one rank stops every rank, naming it ---
cp -r data bad
$py - bad <<'PY'
# the pixels of image 3 cut short inside a well-formed file: its header and
# end read at open, its decoding fails when a rank first crops it
import os, struct, sys, zlib
p = os.path.join(sys.argv[1], "images", sorted(os.listdir(os.path.join(sys.argv[1], "images")))[3])
data, out, i = open(p, "rb").read(), [], 8
while i < len(data):
    (n,) = struct.unpack(">I", data[i:i + 4])
    kind, body = data[i + 4:i + 8], data[i + 8:i + 8 + n]
    body = body[:len(body) // 3] if kind == b"IDAT" else body
    out.append(struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body)))
    i += 12 + n
open(p, "wb").write(data[:8] + b"".join(out))
PY
mpi "$tt" train "${group[@]}" --data bad --cache-dir "$work/cache-bad" --micro-batch 2 --accum 2 --steps 3 --out badrun > bad.out 2>&1
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "rank [01] of 2 failed, so every rank stops" bad.out &&
   grep -q "error: rank [01] of 2: .*synth_00003.png" bad.out; then pass "a bad image on one rank stops both, naming the rank and cause"
else fail "bad image (exit $rc)"; cat bad.out; fi

# --- a rank killed mid-run ---
mpi "$tt" train "${group[@]}" --micro-batch 2 --accum 2 --steps 100000 --checkpoint-every 1 --out killed > killed.out 2>&1 &
job=$!
for _ in $(seq 600); do [ -s killed/last.safetensors ] && break; sleep 0.2; done
sleep 1
victim=""
for p in $(pgrep -f "tiletrain train"); do
  tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && victim=$p
done
killed_at=$(date +%s)
[ -n "$victim" ] && kill -9 "$victim"
wait $job
rc=$?
took=$(( $(date +%s) - killed_at ))
if [ -n "$victim" ] && [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $took -le 60 ] && grep -q "rank 1 with PID .* signal 9" killed.out; then
  pass "rank 1 killed: the job stopped in ${took}s naming it"
else fail "kill (victim '$victim', exit $rc after ${took}s)"; cat killed.out; fi
cp killed/last.safetensors killed.safetensors 2>/dev/null
step=$(python3 -c 'import json, struct, sys
d = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", d[:8])[0]
print(json.loads(d[8:8 + n])["__metadata__"]["step"])' killed.safetensors 2>/dev/null || echo 0)
if [ "$step" -gt 0 ] && mpi "$tt" train "${group[@]}" --micro-batch 2 --accum 2 --steps $((step + 1)) \
     --out after --resume killed.safetensors 2> after.err && [ -s after/last.safetensors ]; then
  pass "the last checkpoint (step $step) resumes"
else fail "resume after the kill (step '$step')"; cat after.err; fi

# --- the watchdog (TT_MPI_TIMEOUT) spares the wait for rank 0's validation ---
# two 2048x3072 images validated at full resolution (seconds on one PoCL
# thread) against a 1 s bound: a bounded wait there stopped the job
"$tt" data synth --out bigval --format folder --count 4 --size 2048x3072 --classes 2 --seed 3 >/dev/null
if TT_MPI_TIMEOUT=1 mpi "$tt" train --data bigval --plan off --tile 64x64 --micro-batch 2 --accum 1 \
     --base-channels 8 --depth 2 --val-fraction 0.5 --val-every 1 --steps 1 --no-augment --quiet \
     --out bigval-run > bigval.out 2>&1 && grep -q '"validation"' bigval-run/train.jsonl; then
  pass "TT_MPI_TIMEOUT=1: a validation longer than the bound, the job goes on"
else fail "TT_MPI_TIMEOUT=1 stopped a validating job"; cat bigval.out; fi

echo "$failures failure(s)"
[ $failures -eq 0 ]

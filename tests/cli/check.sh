#!/usr/bin/env bash
# The command line as a person meets it (CTest runs it as test_cli):
#   - devices lists each backend's devices and names the backend;
#   - a run trained on Vulkan resumes on OpenCL and predicts on Vulkan, one
#     trained on OpenCL resumes on Vulkan: the same steps, and the weights
#     and optimizer state of a run that never changed backend to float
#     rounding (same_checkpoint.py);
#   - bench --by-kernel and selftest run on Vulkan (timestamp queries) as on
#     OpenCL (profiling events);
#   - a misspelt flag gets the closest one suggested, exit status 2;
#   - conflicting flags are named (--sync-bn without batch norm, a --device
#     list without mpirun too);
#   - every subcommand's --help has an example;
#   - --algo NAME runs that convolution algorithm (bench --by-kernel shows its kernels);
#   - bench --layers times the model's convolution shapes; bench --data a data set's steps;
#   - tune runs its search in rounds (new processes) and reports the last;
#   - --log-format jsonl writes nothing but JSON Lines on stdout;
#   - a spoiled tile cache is rebuilt with a warning, the run going on;
#   - errors are coloured on a terminal, and not with NO_COLOR set;
#   - --precision bf16 resumes bit for bit, mem's 16-bit estimate is its measurement,
#     --precision auto times, chooses and remembers;
#   - plan writes a recipe that fits --mem-limit (down to the smallest limits) and train runs;
#     too little data and a corrupt image are refused;
#   - train plans its recipe by default (OUT/plan.json, train.jsonl), --steps may be left
#     out, a resume reads the run's plan back bit for bit, --plan off is the built-in defaults,
#     a flag that resizes the network is planned around (the micro-batch fitted for it);
#   - eval (as validation) drops class-index components under --min-size, as predict does;
#   - predict streams a GeoTIFF into a georeferenced GeoTIFF mask;
#   - a planted wrong kernel is refused under auto and wrong when forced; selftest --algos.
# The ResNet-encoder models' runs are resnet_check.sh's (test_cli_resnet, run beside it).
# usage: tests/cli/check.sh BUILD_DIR
set -uo pipefail
tt=$(cd "${1:?usage: check.sh BUILD_DIR}" && pwd)/tiletrain
. "$(dirname "$0")/lib.sh"

"$tt" data synth --out "$work/data" --format kaggle-rle --count 6 --size 64x96 --classes 2 --seed 3 >/dev/null ||
  fail "data synth"

# devices: every device names its backend; the OpenCL one in use is marked
if "$tt" devices --json --backend opencl >"$work/devices.json" 2>"$work/err" &&
   /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d and all(x["backend"] == "opencl" for x in d), d
assert sum(x["selected"] for x in d) == 1' "$work/devices.json"; then
  pass "devices --json --backend opencl: each device names its backend, one is selected"
else
  fail "devices --json --backend opencl"; cat "$work/err"
fi
expect 2 "not one of all|opencl|vulkan" -- "$tt" devices --backend metal
# --backend auto (the default): a GPU first, else PoCL before lavapipe; a
# selector that names a device of one API only picks that API
if "$tt" devices --json --device llvmpipe >"$work/auto.json" 2>"$work/err" &&
   /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sel = [x["backend"] for x in d if x["selected"]]
want = ["vulkan"] if any("llvmpipe" in x["name"] for x in d if x["backend"] == "vulkan") else []
assert sel == want, (sel, want)' "$work/auto.json"; then
  pass "devices --device llvmpipe: auto marks the Vulkan device"
else
  fail "devices --device llvmpipe (auto)"; cat "$work/err"
fi
expect 1 "matches no OpenCL device" -- "$tt" devices --device no-such-device
# no Vulkan loader, or no Vulkan driver: said plainly, and OpenCL still works
for env in TT_VULKAN_LOADER=libvulkan-missing.so.1 VK_ICD_FILENAMES=/nonexistent/icd.json; do
  if env "$env" "$tt" devices >"$work/novk" 2>&1 && grep -q "OpenCL  0" "$work/novk" &&
     grep -q "Vulkan  none: .*\(install\|driver\)" "$work/novk"; then
    pass "$env: devices lists OpenCL and says why Vulkan is missing"
  else fail "$env: devices"; cat "$work/novk"; fi
done
expect 1 "Vulkan loader 'libvulkan-missing.so.1' could not be opened" -- \
  env TT_VULKAN_LOADER=libvulkan-missing.so.1 "$tt" mem --backend vulkan --tile 32x32
# a Vulkan 1.0 loader (no vkEnumerateInstanceVersion): its devices, its version 1.0
loader10=$(dirname "$tt")/tests/libtt_vk_loader_1_0.so
if [ -f "$loader10" ]; then
  if env TT_VULKAN_LOADER="$loader10" "$tt" devices --backend vulkan >"$work/vk10" 2>&1 &&
     grep -q "Vulkan loader 1.0.0" "$work/vk10"; then
    pass "a Vulkan 1.0 loader: devices lists its devices, loader 1.0.0"
  else fail "a Vulkan 1.0 loader"; cat "$work/vk10"; fi
fi

expect 2 "did you mean '--micro-batch'" -- "$tt" train --data "$work/data" --micro-bach 4
expect 2 "did you mean '--overlap'" -- "$tt" predict --checkpoint x --input y --out z --overlapp 0.5
expect 2 "did you mean 'train'" -- "$tt" trian
expect 2 "did you mean 'check'" -- "$tt" data chek --data "$work/data"
expect 1 "not both" -- "$tt" train --data "$work/data" --out "$work/r0" --val-list "$work/none" --val-fraction 0.2
expect 1 "not both" -- "$tt" train --data "$work/data" --out "$work/r0" --init a --resume b
expect 1 "sync-bn synchronises batch norm: give it with --norm batch" -- \
  "$tt" train --data "$work/data" --out "$work/r0" --norm group --sync-bn --steps 1
expect 1 "is a list, one device per rank under mpirun" -- \
  "$tt" train --data "$work/data" --out "$work/r0" --device 0,1 --steps 1

expect 2 "is not one of auto|im2col_gemm|direct|winograd|implicit_gemm" -- "$tt" bench --algo gemm
# algo WANT AVOID: bench --algo WANT runs WANT's kernels and none named AVOID
algo() {
  "$tt" bench --algo "$1" --by-kernel --tile 32x32 --micro-batch 1 --accum 1 --steps 1 \
    --base-channels 4 --depth 1 --groups 2 >"$work/bench" 2>&1 || { fail "bench --algo $1"; cat "$work/bench"; return; }
  if grep -q "$2" "$work/bench" && ! grep -q "$3" "$work/bench"; then pass "bench --algo $1 runs $2, no $3"
  else fail "bench --algo $1: want $2 and no $3 in:"; cat "$work/bench"; fi
}
algo direct conv_direct im2col
algo im2col_gemm im2col conv_direct_forward
algo winograd winograd_input conv_direct_forward
algo implicit_gemm conv_igemm_forward im2col

expect 2 "--compare-openblas goes with --layers" -- "$tt" bench --compare-openblas
"$tt" bench --layers --json --tile 32x32 --micro-batch 1 --base-channels 4 --depth 1 \
  >"$work/layers" 2>"$work/err" || { fail "bench --layers"; cat "$work/err"; }
if /usr/bin/env python3 - "$work/layers" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
layers = o["layers"]
assert [l["label"] for l in layers] == ["enc.0.conv1", "enc.0.conv2", "bottleneck.conv1",
                                       "bottleneck.conv2", "head"], layers
assert [l["kernel"] for l in layers] == [3, 3, 3, 3, 1], layers
assert "backward_data" not in layers[0]["ms"] and layers[1]["count"] == 4
assert all(l["ms"][d] > 0 and l["algo"][d] != "auto" for l in layers for d in l["ms"]), layers
assert o["gflops"] > 0
PY
then pass "bench --layers --json: the model's convolution shapes, each direction timed"
else fail "bench --layers --json:"; cat "$work/layers"; fi

"$tt" bench --data "$work/data" --cache-dir "$work/tiles" --tile 32x32 --micro-batch 2 --accum 1 \
  --steps 1 --base-channels 4 --depth 1 --groups 2 --json >"$work/bench_data" 2>"$work/err" ||
  { fail "bench --data"; cat "$work/err"; }
if /usr/bin/env python3 - "$work/bench_data" "$work/data" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["data"] == sys.argv[2] and o["data_wait_s"] >= 0 and o["images_per_s"] > 0, o
assert o["device_seconds"].get("data/transfer", 0) > 0, o["device_seconds"]
PY
then pass "bench --data: the data set's steps, data wait and upload time"
else fail "bench --data --json:"; cat "$work/bench_data"; fi

# tune runs its search as rounds in new processes and reports the last
printf 'N N 16 64 32\nT N 32 64 16 2\n' >"$work/shapes.txt"
TMPDIR="$work" TT_CACHE_DIR="$work/cache" "$tt" tune --shapes "$work/shapes.txt" --budget 1 \
  --max-xgemm 1 --max-direct 0 --no-save --json >"$work/tune" 2>"$work/err" ||
  { fail "tune in rounds"; cat "$work/err"; }
if /usr/bin/env python3 - "$work/tune" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["rounds"] == 1 and o["candidates"] >= 1 and o["saved"] is None, o
assert len(o["shapes"]) == 2 and all(s["gflops_after"] > 0 for s in o["shapes"]), o
PY
then pass "tune --no-save: one round in a new process, reported"
else fail "tune --json:"; cat "$work/tune"; fi
if ls "$work"/tiletrain-tune-* >/dev/null 2>&1; then fail "tune --no-save left its temporary file"
else pass "tune --no-save: no temporary file left, nothing in the cache"; fi
if [ -n "$(find "$work/cache" -name 'clblast-*' 2>/dev/null)" ]; then fail "tune --no-save wrote the cache"; fi

for cmd in devices selftest doctor data "data synth" train mem bench report eval postprocess predict tune plan export; do
  # shellcheck disable=SC2086
  "$tt" $cmd --help >"$work/help" 2>&1
  if grep -q "^example" "$work/help"; then pass "$cmd --help has an example"
  else fail "tiletrain $cmd --help has no example"; fi
done

"$tt" train --data "$work/data" --out "$work/run" --cache-dir "$work/tiles" --tile 32x32 \
  --micro-batch 2 --accum 2 --steps 3 --base-channels 4 --depth 2 --groups 2 --val-fraction 0.34 \
  --log-format jsonl >"$work/jsonl" 2>"$work/err" || { fail "train --log-format jsonl"; cat "$work/err"; }
if /usr/bin/env python3 - "$work/jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
objs = [json.loads(l) for l in lines]          # every line is one JSON value
steps = [o for o in objs if "loss" in o]
assert len(steps) == 3, steps
assert "device" in objs[0] and any("validation" in o for o in objs) and "memory" in objs[-1]
PY
then pass "--log-format jsonl: $(wc -l <"$work/jsonl") JSON lines, nothing else"
else fail "--log-format jsonl output is not JSON Lines:"; head -5 "$work/jsonl"; fi

# a spoiled tile cache (garbled bytes in every cached image): each entry is
# rebuilt from its source with a warning, and the run goes on
if /usr/bin/python3 - "$work/tiles" <<'PY'
import glob, sys
entries = glob.glob(sys.argv[1] + "/img-*.tif")
assert entries, "no cached images"
for e in entries:
    with open(e, "r+b") as f:
        f.seek(400)
        f.write(b"\x5a" * 48)
PY
then
  if "$tt" train --data "$work/data" --out "$work/spoiled" --cache-dir "$work/tiles" --tile 32x32 \
       --micro-batch 2 --steps 1 --base-channels 4 --depth 2 --groups 2 --plan off --quiet \
       2>"$work/err" && grep -q "warning: tile cache: .*the entry is deleted and built again" "$work/err"
  then pass "a spoiled tile cache: $(grep -c 'built again' "$work/err") entries rebuilt with a warning, the run goes on"
  else fail "a spoiled tile cache"; cat "$work/err"; fi
else
  fail "spoiling the tile cache"
fi

# --precision fp16|bf16: a checkpointed run resumed goes on bit for bit; mem's
# estimate is its measurement (a ResNet encoder's: resnet_check.sh); a bad
# name is refused with the choices
half=(--data "$work/data" --tile 32x32 --micro-batch 2 --backend opencl --quiet --no-augment
      --seed 4 --norm batch --plan off)
# resumed_same P NAME [FLAGS]: 2 steps in $work/NAME2, and 1 step then a
# resume to 2 in $work/NAME1, in precision P: the same weights bit for bit
resumed_same() {
  local p=$1 two=$work/${2}2 one=$work/${2}1
  shift 2
  "$tt" train "${half[@]}" "$@" --precision "$p" --steps 2 --out "$two" 2>"$work/err" &&
    "$tt" train "${half[@]}" "$@" --precision "$p" --steps 1 --out "$one" 2>>"$work/err" &&
    "$tt" train "${half[@]}" "$@" --precision "$p" --steps 2 --out "$one" \
      --resume "$one/last.safetensors" 2>>"$work/err" &&
    /usr/bin/python3 "$(dirname "$0")/same_checkpoint.py" --tol 0 "$two/last.safetensors" \
      "$one/last.safetensors" >"$work/same" 2>&1
}
if resumed_same bf16 h && grep -q '"precision": *"bf16"' "$work/h2/train.jsonl"
then pass "train --precision bf16: 1 + resume 1 = 2 steps, bit for bit; train.jsonl says bf16"
else fail "train --precision bf16 resume"; cat "$work/err" "$work/same"; fi
if "$tt" mem --tile 64x64 --micro-batch 2 --classes 2 --precision fp16 --measure >"$work/mem" 2>"$work/err" &&
   grep -q "fp16 storage" "$work/mem" &&
   same_peak "$work/mem"
then pass "mem --precision fp16 --measure: the estimate is the measurement ($(grep '^peak total' "$work/mem" | tr -s ' '))"
else fail "mem --precision fp16 --measure"; cat "$work/mem" "$work/err"; fi
# with --checkpointing a 16-bit step is banded (src/model/exec_band.c):
# resumed bit for bit, and its estimate is its measurement
if resumed_same fp16 hc --checkpointing &&
   "$tt" mem --tile 64x64 --micro-batch 2 --classes 2 --precision bf16 --checkpointing --measure \
     >"$work/mem" 2>"$work/err" && same_peak "$work/mem"
then pass "--checkpointing in 16 bits (banded): 1 + resume 1 = 2 steps bit for bit; mem's estimate is its measurement ($(grep '^peak total' "$work/mem" | tr -s ' '))"
else fail "--checkpointing in 16 bits: resume or mem"; cat "$work/err" "$work/same" "$work/mem"; fi
# --precision auto: each mode timed and checked, the choice said, logged and
# kept: a second run takes it from the precision-db
if "$tt" train "${half[@]}" --precision auto --steps 1 --out "$work/ha" 2>"$work/err" &&
   grep -q '"precision_auto"' "$work/ha/train.jsonl" &&
   "$tt" train "${half[@]}" --precision auto --steps 1 --out "$work/hb" 2>"$work/err2" &&
   grep -q "chosen before on this device" "$work/err2"
then pass "train --precision auto: $(grep -o 'auto: [a-z0-9]*' "$work/err" | head -1), then from the precision-db"
else fail "train --precision auto"; cat "$work/err" "$work/err2"; fi
# fp16: dynamic loss scaling from 65536; a resumed run carries the scale and
# its count of clean windows (train/loss_scale.h), bit for bit
if resumed_same fp16 f &&
   grep -q '"step": 2,.*"loss_scale": 65536, "loss_scale_clean": 2' "$work/f1/train.jsonl"
then pass "train --precision fp16: loss scale 65536; 1 + resume 1 = 2 steps bit for bit, the count carried"
else fail "train --precision fp16 loss scale resume"; cat "$work/err" "$work/same" "$work/f1/train.jsonl"; fi
expect 1 "--loss-scale 1000: give auto" -- "$tt" train "${half[@]}" --precision fp16 --steps 1 \
  --out "$work/f0" --loss-scale 1000
expect 1 "mem estimates one storage" -- "$tt" mem --tile 32x32 --classes 2 --precision auto
expect 2 "fp32|fp16|bf16" -- "$tt" train --data "$work/data" --out "$work/h0" --precision half

# plan: a recipe from the data set and the device, written as plan.json whose
# args train takes; under --mem-limit mem's estimate of those args fits it,
# down to limits where the tile is halved and checkpointing turned on; below
# the smallest configuration, and on an empty, a one-image or a corrupt data
# set, an error and no recipe
plan_fits() { # LIMIT BYTES: the plan under LIMIT, mem of its args within BYTES, train runs them
  "$tt" plan --data "$work/data" --mem-limit "$1" --out "$work/plan.json" >"$work/plan.txt" 2>"$work/err" &&
  mapfile -t plan_args < <(/usr/bin/python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["args"]))' "$work/plan.json") &&
  "$tt" mem --data "$work/data" "${plan_args[@]}" --json >"$work/plan_mem.json" 2>>"$work/err" &&
  /usr/bin/python3 -c 'import json,sys; t = json.load(open(sys.argv[1]))["estimate"]["total_bytes"]; assert t <= int(sys.argv[2]), t' "$work/plan_mem.json" "$2" &&
  "$tt" train --data "$work/data" --out "$work/planned" "${plan_args[@]}" --steps 2 --quiet 2>>"$work/err"
}
for limit in 6MiB:6291456 3MiB:3145728 1MiB:1048576; do
  if plan_fits "${limit%%:*}" "${limit##*:}"
  then pass "plan --mem-limit ${limit%%:*}: $(grep -o -- '--tile [0-9x]* .*--micro-batch [0-9]*\( --accum [0-9]*\)\?\( --checkpointing\)\?' "$work/plan.txt" | tail -1 | cut -c1-80); mem of its args fits; train runs them"
  else fail "plan --mem-limit ${limit%%:*}"; cat "$work/plan.txt" "$work/err"; fi
done
expect 1 "no configuration fits" -- "$tt" plan --data "$work/data" --mem-limit 200KiB --out "$work/p2.json"
# --out a folder: the plan goes to FOLDER/plan.json, as in a run folder
mkdir -p "$work/plan_dir"
if "$tt" plan --data "$work/data" --out "$work/plan_dir" >/dev/null 2>"$work/err" &&
   [ -s "$work/plan_dir/plan.json" ]
then pass "plan --out FOLDER writes FOLDER/plan.json"
else fail "plan --out FOLDER"; cat "$work/err"; fi
# train plans by default: the plan's recipe, OUT/plan.json and a "plan" line
# in train.jsonl, the flags given kept (--steps: no choice of it); --plan
# FILE takes a plan.json's args, its steps too when --steps is left out
if "$tt" train --data "$work/data" --out "$work/pa" --mem-limit 6MiB --steps 1 --quiet 2>"$work/err" &&
   /usr/bin/python3 -c '
import json, sys
plan = json.load(open(sys.argv[1]))["choices"]
lines = [json.loads(l) for l in open(sys.argv[2])]
cfg = lines[0]["config"]
assert cfg["plan"] == "auto" and cfg["steps"] == 1, cfg
assert cfg["micro_batch"] == int(plan["micro-batch"]["value"]) and cfg["norm"] == plan["norm"]["value"], (cfg, plan)
logged = [l["plan"] for l in lines if "plan" in l]
assert len(logged) == 1 and logged[0]["choices"] == plan, logged
recipe = {r["option"]: r for l in lines if "recipe" in l for r in l["recipe"]}
pp = [l["postprocess"] for l in lines if "postprocess" in l]
assert pp and pp[-1]["mean_dice"] >= pp[-1]["default_mean_dice"], pp
assert recipe["steps"]["from"] == "flag" and recipe["norm"]["from"] == "plan", recipe
assert recipe["norm"]["reason"] == plan["norm"]["reason"] and recipe["seed"]["from"] == "default"' \
     "$work/pa/plan.json" "$work/pa/train.jsonl" &&
   grep -q "<td style='text-align:left'>plan</td>" "$work/pa/report.html" &&
   grep -q "<h2>Post-processing</h2>" "$work/pa/report.html" &&
   /usr/bin/python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
assert "--steps" not in p["args"], p["args"]  # given, so not a choice
p["args"] += ["--steps", "3"]
i = p["args"].index("--loss")  # as a plan before --loss wrote it
p["args"][i:i + 2] = ["--dice-weight", "0.5"]
json.dump(p, open(sys.argv[2], "w"))' "$work/pa/plan.json" "$work/plan3.json" &&
   "$tt" train --data "$work/data" --out "$work/pb" --plan "$work/plan3.json" --norm group --quiet 2>>"$work/err" &&
   grep -q '"norm": *"group"' "$work/pb/train.jsonl" && grep -q '"steps": *3' "$work/pb/train.jsonl" &&
   grep -q '"option":"loss","value":"bce+0.5\*dice"' "$work/pb/train.jsonl"
then pass "train plans by default (OUT/plan.json, train.jsonl), --steps over it; --plan FILE sets the steps, --norm group over it, an old --dice-weight as --loss"
else fail "train --plan"; cat "$work/err"; fi
# postprocess: the search outside training, on the run's validation images,
# into a copy of the checkpoint that predict then takes
if "$tt" postprocess --checkpoint "$work/pa/last.safetensors" --data "$work/data" \
     --val-list "$work/pa/validation.txt" --tile 64x64 --out "$work/pa/pp.safetensors" >"$work/pp.out" 2>"$work/err" &&
   grep -q "(competition Dice)" "$work/pp.out" &&
   /usr/bin/python3 -c '
import json, struct, sys
f = open(sys.argv[1], "rb"); n = struct.unpack("<Q", f.read(8))[0]
pp = json.loads(json.loads(f.read(n))["__metadata__"]["postprocess"])
assert len(pp["threshold"]) == len(pp["min_size"]) > 0, pp' "$work/pa/pp.safetensors"
then pass "postprocess: $(grep '^mean' "$work/pp.out" | tr -s ' ' | cut -c1-60); written into a copy"
else fail "postprocess"; cat "$work/err" "$work/pp.out"; fi
# a flag that resizes the network (a larger tile) is planned around: the
# plan's micro-batch is fitted for the tile given (no choice of tile in
# plan.json), and mem of the plan's args with that tile fits the limit
if "$tt" train --data "$work/data" --out "$work/pt" --mem-limit 6MiB --tile 64x96 --steps 1 --quiet 2>"$work/err" &&
   /usr/bin/python3 -c '
import json, sys
plan = json.load(open(sys.argv[1]))["choices"]
cfg = json.loads(open(sys.argv[2]).readline())["config"]
micro, accum = int(plan["micro-batch"]["value"]), int(plan["accum"]["value"])
assert "tile" not in plan and cfg["tile_w"] == 96, (cfg, plan)
assert cfg["micro_batch"] == micro and cfg["accum"] == accum and micro * accum >= 8, (cfg, plan)' \
     "$work/pt/plan.json" "$work/pt/train.jsonl" &&
   mapfile -t plan_args < <(/usr/bin/python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["args"]))' "$work/pt/plan.json") &&
   "$tt" mem --data "$work/data" --tile 64x96 "${plan_args[@]}" --json >"$work/pt_mem.json" 2>>"$work/err" &&
   /usr/bin/python3 -c 'import json,sys; t = json.load(open(sys.argv[1]))["estimate"]["total_bytes"]; assert t <= 6 << 20, t' "$work/pt_mem.json"
then pass "train --tile 64x96 under 6MiB: planned around the tile given ($(/usr/bin/python3 -c 'import json,sys; c = json.load(open(sys.argv[1]))["choices"]; print("micro-batch", c["micro-batch"]["value"], "x accum", c["accum"]["value"])' "$work/pt/plan.json")), mem of it fits"
else fail "train --tile over a plan"; cat "$work/err"; fi
# a planned run resumed goes on with its plan, bit for bit (a constant rate
# over the plan's cosine, whose length is --steps); --plan off is the
# built-in defaults (group norm, lr 1e-3), and a run trained so resumes so
planned=(--data "$work/data" --mem-limit 6MiB --quiet --no-augment --seed 5 --schedule constant)
if "$tt" train "${planned[@]}" --steps 2 --out "$work/pr2" 2>"$work/err" &&
   "$tt" train "${planned[@]}" --steps 1 --out "$work/pr1" 2>>"$work/err" &&
   "$tt" train "${planned[@]}" --steps 2 --out "$work/pr1" --resume "$work/pr1/last.safetensors" 2>>"$work/err" &&
   grep -q "the recipe of $work/pr1/plan.json" "$work/err" &&
   /usr/bin/python3 "$(dirname "$0")/same_checkpoint.py" --tol 0 "$work/pr2/last.safetensors" \
     "$work/pr1/last.safetensors" >"$work/same" 2>&1
then pass "a planned run: 1 + resume 1 = 2 steps, bit for bit, with OUT/plan.json read back"
else fail "planned resume"; cat "$work/err" "$work/same"; fi
if "$tt" train --data "$work/data" --out "$work/off" --plan off --tile 32x32 --steps 1 --quiet 2>"$work/err" &&
   "$tt" train --data "$work/data" --out "$work/off" --tile 32x32 --steps 2 --quiet \
     --resume "$work/off/last.safetensors" 2>>"$work/err" &&
   grep -q "trained without a plan" "$work/err" && [ ! -e "$work/off/plan.json" ] &&
   /usr/bin/python3 -c '
import json, sys
cfgs = [json.loads(l)["config"] for l in open(sys.argv[1]) if "\"config\"" in l]
assert len(cfgs) == 2 and all("plan" not in c and c["norm"] == "group" and c["lr"] == 1e-3 for c in cfgs), cfgs' \
     "$work/off/train.jsonl"
then pass "--plan off: the built-in defaults, no plan.json; resumed without --plan off, still none"
else fail "--plan off"; cat "$work/err"; fi
# early stopping: at rate 0 no validation beats the first, so --patience 1
# stops at the second; --keep-best 2 keeps both; a resume carries the
# count on (it stops at its first validation) and keeps the two best
es=(--data "$work/data" --plan off --tile 32x32 --micro-batch 2 --val-fraction 0.25 --val-every 1
    --lr 0 --patience 1 --keep-best 2 --no-augment --quiet --out "$work/es")
if "$tt" train "${es[@]}" --steps 6 >"$work/es.out" 2>"$work/err" &&
   /usr/bin/python3 -c '
import json, sys
stops = [json.loads(l)["early_stop"] for l in open(sys.argv[1]) if "early_stop" in l]
assert len(stops) == 1 and stops[0]["best_step"] == 1 and stops[0]["validations_since"] == 1, stops' \
     "$work/es/train.jsonl" &&
   [ -s "$work/es/best-step1.safetensors" ] && [ -s "$work/es/best-step2.safetensors" ] &&
   "$tt" train "${es[@]}" --steps 6 --resume "$work/es/last.safetensors" 2>>"$work/err" &&
   [ "$(grep -c '"early_stop"' "$work/es/train.jsonl")" = 2 ] &&
   grep -q '"step": *3, "early_stop"' "$work/es/train.jsonl" &&
   [ "$(ls "$work/es" | grep -c '^best-step')" = 2 ]
then pass "--patience 1 stops at the 2nd validation, --keep-best 2 keeps 2; a resume goes on counting"
else fail "--patience/--keep-best"; cat "$work/err" "$work/es.out"; fi
expect 1 "--patience counts validations" -- "$tt" train --data "$work/data" --plan off --patience 2 --out "$work/es2"
# mem: --ema's average is a second parameter arena; --tta flip 4 passes a
# tile and one batch of views (4 tiles of 32x32, 3 channels + 2 classes) on the host
if "$tt" mem --tile 32x32 --classes 2 --json >"$work/m0.json" 2>"$work/err" &&
   "$tt" mem --tile 32x32 --classes 2 --ema 0.9 --tta flip --json >"$work/m1.json" 2>>"$work/err" &&
   /usr/bin/python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
pa, pb = a["estimate"]["categories"]["parameters"], b["estimate"]["categories"]["parameters"]
assert pb == 2 * pa, (pa, pb)
v = b["validation"]
assert v["forward_passes_per_tile"] == 4 and v["device_bytes"] == 0 and v["host_bytes"] == 4 * 5 * 32 * 32 * 4, v' \
     "$work/m0.json" "$work/m1.json"
then pass "mem: --ema doubles the parameters, --tta flip is 4 passes and host memory only"
else fail "mem --ema --tta"; cat "$work/err"; fi
expect 1 "--augment: unknown transform 'flipp'; the transforms are none, default, flip" -- "$tt" train --data "$work/data" --augment flip,flipp --out "$work/es3"
expect 2 "'d8' for tta is not one of none|flip|d4" -- "$tt" predict --checkpoint x --input y --out z --tta d8
"$tt" train --help >"$work/help" 2>&1
if grep -q -- "--tile HxW .*(default 256x256) \[train: from the plan\]" "$work/help" &&
   grep -q -- "--seed K .*(default 0)$" "$work/help"
then pass "train --help: each default, and which the plan chooses"
else fail "train --help does not mark the planned options"; fi
mkdir -p "$work/one/images" "$work/one/masks" "$work/none/images" "$work/none/masks" "$work/bad/images" "$work/bad/masks"
first=$(ls "$work/data/train_images" | head -1)
expect 1 "no usable items" -- "$tt" plan --data "$work/none" --out "$work/p0.json"
expect 1 "no usable items" -- "$tt" train --data "$work/none" --out "$work/t0"
cp "$work/data/train_images/$first" "$work/one/images/" &&
  /usr/bin/python3 -c 'import sys; from PIL import Image; w, h = Image.open(sys.argv[1]).size; Image.new("L", (w, h)).save(sys.argv[2])' \
    "$work/one/images/$first" "$work/one/masks/${first%.*}.png"
expect 1 "at least 2" -- "$tt" plan --data "$work/one" --out "$work/p1.json"
# a corrupt image: its name, not a recipe
cp "$work/one/images/$first" "$work/bad/images/a.jpg" && cp "$work/one/masks/${first%.*}.png" "$work/bad/masks/a.png" &&
  cp "$work/one/masks/${first%.*}.png" "$work/bad/masks/b.png" &&
  head -c 300 "$work/one/images/$first" >"$work/bad/images/b.jpg"
expect 1 "b.jpg" -- "$tt" plan --data "$work/bad" --out "$work/p3.json"

# class-index validation drops components under --min-size as predict does:
# over every image's pixels nothing of a class is left, so each class's Dice
# (per image, 1 where both are empty) is the share of images without it
"$tt" data synth --out "$work/fdata" --format folder --count 4 --size 48x64 --classes 3 --seed 2 >/dev/null
if "$tt" train --data "$work/fdata" --out "$work/fr" --plan off --tile 32x32 --base-channels 4 --depth 1 \
     --groups 2 --steps 1 --quiet 2>"$work/err" &&
   "$tt" eval --checkpoint "$work/fr/last.safetensors" --data "$work/fdata" --min-size 100000 --json \
     >"$work/feval.json" 2>>"$work/err" &&
   /usr/bin/python3 - "$work/feval.json" "$work/fdata/masks" <<'PY'
import json, os, sys
from PIL import Image
m = json.load(open(sys.argv[1]))
masks = [set(Image.open(os.path.join(sys.argv[2], f)).getdata()) for f in sorted(os.listdir(sys.argv[2]))]
for c in (1, 2):
    want = sum(c not in v for v in masks) / len(masks)
    assert abs(m["classes"][c]["dice"] - want) < 1e-9, (c, m["classes"][c], want)
PY
then pass "eval --min-size on class-index masks: every class's components dropped, Dice = images without it"
else fail "class-index --min-size"; cat "$work/err" "$work/feval.json"; fi

# predict on a GeoTIFF (--output auto): STEM_mask.tif streamed on the
# raster's grid with its GeoTIFF tags, the PNG path's mask (with --min-size too);
# --probabilities: a float32 band per class; --rle refused for a streamed
# input, --probabilities without one
if /usr/bin/python3 - "$work/geo.tif" <<'PY'
import sys
import numpy as np
from PIL import Image, TiffImagePlugin
ifd = TiffImagePlugin.ImageFileDirectory_v2()
for tag, kind, value in ((33550, 12, (0.5, 0.5, 0.0)), (33922, 12, (0, 0, 0, 500000.0, 4649776.0, 0)),
                         (34735, 3, (1, 1, 0, 2, 1024, 0, 1, 1, 3072, 0, 1, 32633)),
                         (34737, 2, "WGS 84 / UTM zone 33N|")):
    ifd[tag] = value
    ifd.tagtype[tag] = kind
pixels = np.random.default_rng(1).integers(0, 256, (97, 150, 3), dtype=np.uint8)
Image.fromarray(pixels).save(sys.argv[1], tiffinfo=ifd, compression="tiff_lzw")
PY
then
  geo=(--checkpoint "$work/fr/last.safetensors" --input "$work/geo.tif" --tile 32x32 --quiet)
  if "$tt" predict "${geo[@]}" --out "$work/geo" --probabilities 2>"$work/err" &&
     "$tt" predict "${geo[@]}" --out "$work/geo_png" --output png --min-size 0 2>>"$work/err" &&
     "$tt" predict "${geo[@]}" --out "$work/geo_min" --min-size 30 2>>"$work/err" &&
     "$tt" predict "${geo[@]}" --out "$work/geo_min_png" --output png --min-size 30 2>>"$work/err" &&
     [ ! -e "$work/geo_min/geo_mask.tif.pass1" ] &&
     [ ! -e "$work/geo/geo_overlay.png" ] && ! ls "$work/geo" | grep -q '\.part$' &&
     /usr/bin/python3 - "$work/geo.tif" "$work/geo/geo_mask.tif" "$work/geo_png/geo_mask.png" \
       "$work/geo/geo_prob.tif" "$work/geo_min/geo_mask.tif" "$work/geo_min_png/geo_mask.png" <<'PY'
import sys
import numpy as np
from PIL import Image, TiffImagePlugin
src, mask, png = (Image.open(p) for p in sys.argv[1:4])
with open(sys.argv[4], "rb") as f:  # float32 bands: PIL reads the tags, not the pixels
    prob = TiffImagePlugin.ImageFileDirectory_v2(f.read(8))
    f.seek(prob.next)
    prob.load(f)
assert mask.size == src.size and mask.mode == "L", (mask.size, mask.mode)
for tag in (33550, 33922, 34735, 34737):
    assert mask.tag_v2.get(tag) == src.tag_v2.get(tag), (tag, mask.tag_v2.get(tag))
assert mask.tag_v2[322] == 256 and mask.tag_v2[259] == 8  # tiled 256, deflate
assert (np.array(mask) == np.array(png)).all()
small, small_png = (np.array(Image.open(p)) for p in sys.argv[5:7])
assert (small == small_png).all()  # --min-size: the second pass's removal is the PNG path's
assert prob[277] == 3 and prob[339] == (3,) * 3 and prob[258] == (32,) * 3, dict(prob)
assert (prob[256], prob[257]) == src.size and prob.get(33922) == src.tag_v2.get(33922)
PY
  then pass "predict a GeoTIFF: STEM_mask.tif on its grid, tags copied, the PNG path's mask (--min-size 0 and 30); --probabilities"
  else fail "predict a GeoTIFF"; cat "$work/err"; fi
  expect 1 "--rle encodes whole images' masks" -- "$tt" predict "${geo[@]}" --out "$work/geo2" --rle "$work/geo.csv"
  expect 1 "band 4 asked for, and it has 3 bands" -- "$tt" predict "${geo[@]}" --out "$work/geo2" --bands 3,2,4
  expect 1 "--bands picks bands of TIFF rasters" -- "$tt" predict "${geo[@]}" --out "$work/geo2" \
    --output png --bands 3,2,1
  expect 1 "--probabilities writes STEM_prob.tif" -- "$tt" predict "${geo[@]}" --out "$work/geo2" \
    --output png --probabilities
else
  fail "making a GeoTIFF with PIL"
fi

# selftest API: its kernels, its GEMM and the device's timers checked on that API
selftest() {
  if TT_VULKAN_VALIDATION=1 "$tt" selftest --backend "$1" >"$work/self" 2>"$work/err" &&
     grep -q "^selftest on $1 device" "$work/self" &&
     grep -q "device timers (profiling) .* right" "$work/self" && grep -q "^selftest passed" "$work/self"
  then pass "selftest --backend $1: kernels, GEMM and timers"
  else fail "selftest --backend $1"; cat "$work/err" "$work/self"; fi
}
selftest opencl

# Vulkan (lavapipe in CI): train there, resume the checkpoint on OpenCL, predict on Vulkan;
# train on OpenCL, resume on Vulkan; both end where 3 steps on OpenCL alone end
# resumed_log LOG FIRST THEN: the run started on backend FIRST, was resumed
# on THEN, and logged steps 1, 2 | 3
resumed_log() {
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
starts = [l["device"]["backend"] for l in lines if "device" in l]
steps = [l["step"] for l in lines if "loss" in l]
assert starts == sys.argv[2:4], starts
assert steps == [1, 2, 3], steps
PY
}
if "$tt" devices --backend vulkan >/dev/null 2>&1; then
  small=(--data "$work/data" --tile 32x32 --micro-batch 2 --accum 1 --base-channels 4 --depth 2
         --groups 2 --quiet --algo im2col_gemm --plan off)
  "$tt" train --backend opencl "${small[@]}" --out "$work/cl" --steps 3 2>"$work/err" ||
    { fail "3 steps on OpenCL"; cat "$work/err"; }
  # TT_VULKAN_VALIDATION=1: a validation message fails the Vulkan runs
  if TT_VULKAN_VALIDATION=1 "$tt" train --backend vulkan "${small[@]}" --out "$work/vk" --steps 2 \
       2>"$work/err" &&
     "$tt" train --backend opencl "${small[@]}" --out "$work/vk" --steps 3 \
       --resume "$work/vk/last.safetensors" 2>>"$work/err" &&
     "$tt" predict --backend vulkan --checkpoint "$work/vk/last.safetensors" \
       --input "$work/data/train_images" --out "$work/vkpred" --tile 32x32 --quiet 2>>"$work/err" &&
     resumed_log "$work/vk/train.jsonl" vulkan opencl
  then pass "train on Vulkan, resume on OpenCL (steps 1, 2 | 3), predict on Vulkan"
  else fail "Vulkan train / OpenCL resume / Vulkan predict"; cat "$work/err"; fi
  if "$tt" train --backend opencl "${small[@]}" --out "$work/cv" --steps 2 2>"$work/err" &&
     TT_VULKAN_VALIDATION=1 "$tt" train --backend vulkan "${small[@]}" --out "$work/cv" --steps 3 \
       --resume "$work/cv/last.safetensors" 2>>"$work/err" &&
     resumed_log "$work/cv/train.jsonl" opencl vulkan
  then pass "train on OpenCL, resume on Vulkan (steps 1, 2 | 3)"
  else fail "OpenCL train / Vulkan resume"; cat "$work/err"; fi
  # apart by float rounding only: the backends sum their GEMMs in different orders
  for run in vk cv; do
    if /usr/bin/python3 "$(dirname "$0")/same_checkpoint.py" --tol 1e-4 "$work/cl/last.safetensors" \
         "$work/$run/last.safetensors" >"$work/same" 2>&1
    then pass "$run: as if trained on OpenCL alone: $(head -1 "$work/same")"
    else fail "$run: resumed across backends, not where OpenCL alone ends:"; cat "$work/same"; fi
  done
  # bench on Vulkan: the device time of every kernel from timestamp queries
  if TT_VULKAN_VALIDATION=1 "$tt" bench --backend vulkan --by-kernel --json --tile 32x32 \
       --micro-batch 1 --accum 1 --steps 1 --base-channels 4 --depth 1 --groups 2 \
       --algo im2col_gemm >"$work/vkbench" 2>"$work/err" &&
     /usr/bin/python3 - "$work/vkbench" <<'PY'
import json, math, sys
o = json.load(open(sys.argv[1]))
k = o["device_seconds"]
assert o["backend"] == "vulkan", o
assert {"forward/gemm", "backward/gemm", "loss/bce_forward", "optimizer/adamw"} <= set(k), k
assert all(math.isfinite(v) and v > 0 for v in k.values()), k
PY
  then pass "bench --backend vulkan --by-kernel: each kernel's device time from timestamps"
  else fail "bench --backend vulkan --by-kernel"; cat "$work/err" "$work/vkbench"; fi
  # train --profile: device seconds per kind in train.jsonl, on either API
  for api in opencl vulkan; do
    if "$tt" train --backend "$api" --data "$work/data" --tile 32x32 --micro-batch 2 --accum 1 \
         --base-channels 4 --depth 1 --groups 2 --steps 1 --quiet --profile --out "$work/prof-$api" \
         >/dev/null 2>"$work/err" &&
       /usr/bin/python3 -c '
import json, sys
p = [json.loads(l)["profile"] for l in open(sys.argv[1]) if l.startswith("{\"profile\"")]
assert len(p) == 1 and p[0].get("forward/conv", 0) > 0 and p[0].get("backward/conv", 0) > 0, p' \
         "$work/prof-$api/train.jsonl"; then pass "train --profile --backend $api: device time per kind in train.jsonl"
    else fail "train --profile --backend $api"; cat "$work/err"; fi
  done
  selftest vulkan
  # bench --layers times by the wall clock: it runs on Vulkan, DIRECT included
  if "$tt" bench --layers --json --backend vulkan --algo direct --tile 16x16 --micro-batch 1 \
       --base-channels 4 --depth 1 >"$work/vklayers" 2>"$work/err" &&
     "$tt" devices --backend vulkan --json >"$work/vkdevices" 2>>"$work/err" &&
     /usr/bin/python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
names = [d["name"] for d in json.load(open(sys.argv[2]))]
assert o["device"] in names, (o["device"], names)
assert all(a == "direct" for l in o["layers"] for a in l["algo"].values()), o' \
       "$work/vklayers" "$work/vkdevices"; then
    pass "bench --layers --backend vulkan --algo direct: timed on the Vulkan device"
  else fail "bench --layers --backend vulkan"; cat "$work/err" "$work/vklayers"; fi
  # the estimate stands in for Vulkan (its algorithms only, those AUTO times
  # there), so it equals the measurement (a UNet of 3 levels: shapes no run
  # above tuned, picks of several algorithms, in 2 s, not the default model's 6)
  if "$tt" mem --backend vulkan --tile 32x32 --micro-batch 2 --base-channels 8 --depth 3 \
       --measure --json >"$work/vkauto" 2>"$work/err" &&
     measured_same "$work/vkauto"; then
    pass "mem --backend vulkan --measure (AUTO): the estimate equals the measurement"
  else fail "mem --backend vulkan --measure (AUTO)"; cat "$work/err" "$work/vkauto"; fi
  # the activations (140 MiB) are more than one storage binding addresses on
  # lavapipe (128 MiB): without device addresses (TT_VULKAN_ADDRESSED=0; with
  # them a kernel reaches a whole allocation) the plan spreads them over
  # buffers (im2col + GEMM: AUTO would time DIRECT on every layer, minutes on
  # lavapipe at this size; 128 classes over a UNet of 4 channels and one
  # level: the logits and the loss's tensors make the activations, in 3 s,
  # where a UNet's own layers of as many bytes took 26 s, im2col most of it)
  if TT_VULKAN_ADDRESSED=0 "$tt" mem --backend vulkan --tile 128x256 --base-channels 4 --groups 4 \
       --depth 1 --classes 128 --micro-batch 4 --accum 1 --algo im2col_gemm --measure --json \
       >"$work/vkmem" 2>"$work/err" &&
     /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["estimate"]["total_bytes"] == d["measured"]["total_bytes"], d
acts, limit = d["measured"]["categories"]["activations"], d["device"]["max_binding_bytes"]
assert d["device"]["backend"] == "vulkan" and acts > limit, (acts, limit)' "$work/vkmem"; then
    pass "mem --backend vulkan --measure: the estimate equals the measurement, activations over one binding"
  else fail "mem --backend vulkan --measure"; cat "$work/err" "$work/vkmem"; fi
else
  echo "skip: no Vulkan device (tiletrain devices --backend vulkan)"
fi

# colour: `script` gives the command a terminal
if command -v script >/dev/null; then
  script -qec "$tt train --data $work/data --micro-bach 4" /dev/null >"$work/tty" 2>&1
  script -qec "env NO_COLOR=1 $tt eval --checkpoint $work/none --data $work/data" /dev/null >"$work/nocolor" 2>&1
  script -qec "env -u NO_COLOR TERM=xterm $tt eval --checkpoint $work/none --data $work/data" /dev/null >"$work/color" 2>&1
  if grep -q $'\033\[' "$work/nocolor"; then fail "NO_COLOR=1 still wrote colour"; else pass "NO_COLOR=1: no colour"; fi
  if grep -q $'\033\[1;31merror:' "$work/color"; then pass "a terminal gets a red 'error:'"
  else fail "no colour on a terminal:"; cat -v "$work/color"; fi
fi

# a planted wrong kernel (TT_CONV_PERTURB: one wrong element in each of its
# outputs): forced, it trains on wrong gradients; under auto the autotuner
# refuses it (fresh find-db) and the gradients are direct's within 1e-3 of
# their largest value (auto's picks sum in other orders: on this network
# direct_w16's gradients differ from direct's by 9.0e-5, winograd4x4_fused's
# by 2.4e-4), the forced wrong one's by more than 1e-2 (8.5e-2)
pd=$work/plant_data
plant=(train --data "$pd" --plan off --no-shuffle --no-augment --tile 32x48 --micro-batch 4
       --accum 1 --steps 1 --base-channels 8 --depth 2 --norm group --groups 4
       --cache-dir "$work/plant_tiles")
if "$tt" data synth --out "$pd" --format folder --count 4 --size 32x48 --classes 3 >/dev/null 2>"$work/err" &&
   "$tt" "${plant[@]}" --algo direct --save-grads "$work/g_direct.safetensors" --out "$work/pd" 2>>"$work/err" &&
   TT_CACHE_DIR="$work/plant_cache" TT_CONV_PERTURB=winograd4x4 "$tt" "${plant[@]}" --algo auto \
     --save-grads "$work/g_auto.safetensors" --out "$work/pa" 2>>"$work/err" &&
   grep -q "winograd4x4 is off .*refused on this device" "$work/err" &&
   /usr/bin/python3 "$(dirname "$0")/same_checkpoint.py" --no-counters --scale file --tol 1e-3 \
     "$work/g_auto.safetensors" "$work/g_direct.safetensors" >"$work/same" 2>&1 &&
   TT_CONV_PERTURB=winograd4x4 "$tt" "${plant[@]}" --algo winograd4x4 \
     --save-grads "$work/g_w4.safetensors" --out "$work/pw" 2>>"$work/err" &&
   ! /usr/bin/python3 "$(dirname "$0")/same_checkpoint.py" --no-counters --scale file --tol 1e-2 \
     "$work/g_w4.safetensors" "$work/g_direct.safetensors" >/dev/null 2>&1
then pass "a planted wrong winograd4x4: refused under auto (gradients direct's: $(tail -1 "$work/same")), wrong when forced"
else fail "planted wrong kernel"; cat "$work/err" "$work/same"; fi
# selftest --algos checks every algorithm on a recipe's layers, and fails on a planted one
if "$tt" selftest --algos --base-channels 8 --depth 2 --tile 32x48 --micro-batch 3 >"$work/algos" 2>"$work/err" &&
   grep -q " 0 off the bound" "$work/algos" &&
   ! TT_CONV_PERTURB=direct "$tt" selftest --algos --base-channels 8 --depth 2 --tile 32x48 \
     --micro-batch 3 >"$work/algos_bad" 2>>"$work/err" &&
   grep -q "direct [0-9.e+-]* FAILED" "$work/algos_bad"
then pass "selftest --algos: $(grep 'off the bound' "$work/algos" | tr -s ' '); a planted wrong direct fails it"
else fail "selftest --algos"; cat "$work/err" "$work/algos" "$work/algos_bad"; fi
# doctor: yes on this device for a small recipe (every check right, the
# overfit halving its loss, memory as estimated), in text and JSON, the
# JSON one on a device that holds every kernel to 64 work-items a group
# (the test knob), which it lists; no, with exit 1 and the kernel named,
# when one algorithm is planted wrong
doc=(--plan off --base-channels 8 --depth 2 --tile 32x48 --micro-batch 2 --norm batch)
if TT_CACHE_DIR="$work/doc_cache" "$tt" doctor "${doc[@]}" >"$work/doc" 2>"$work/err" &&
   grep -q "^this device trains this recipe: yes" "$work/doc" &&
   grep -q "overfit of one micro-batch, 20 steps *right" "$work/doc" &&
   grep -q "^work-groups: up to [0-9]* work-items on this device; no kernel run is held lower" "$work/doc" &&
   TT_KERNEL_WG_LIMIT=64 TT_CACHE_DIR="$work/doc_cache" "$tt" doctor "${doc[@]}" --json \
     >"$work/doc.json" 2>>"$work/err" &&
   /usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
assert d["trains"] is True and d["device"]["driver_version"] and d["images_per_s"] > 0
held = d["work_groups"]["held_lower"]
assert d["work_groups"]["device"] > 64 and all(h["most"] == 64 for h in held)
assert any(h["kernel"].startswith("conv_") for h in held), held
assert d["memory_measured_bytes"] <= d["memory_estimate_bytes"]
assert all(c["verdict"] in ("right", "slow") for c in d["checks"]) and len(d["checks"]) > 20' \
     "$work/doc.json" &&
   TT_CACHE_DIR="$work/doc_cache" "$tt" doctor --data "$work/data" >"$work/doc_data" 2>>"$work/err" &&
   grep -q "^recipe: .* tile 64x64" "$work/doc_data" &&
   ! TT_CACHE_DIR="$work/doc_bad" TT_CONV_PERTURB=direct_w8 "$tt" doctor "${doc[@]}" \
     >"$work/doc_bad" 2>>"$work/err" &&
   grep -q "^this device trains this recipe: no, .* direct_w8 is wrong" "$work/doc_bad" &&
   grep -q "^  refused: conv2d .*: direct_w8, .* off im2col_gemm" "$work/doc_bad"
then pass "doctor: $(tail -1 "$work/doc"); a planted wrong direct_w8: $(tail -1 "$work/doc_bad" | cut -c1-90)"
else fail "doctor"; cat "$work/err" "$work/doc" "$work/doc_bad"; fi

[ "$failures" = 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all command-line checks passed"

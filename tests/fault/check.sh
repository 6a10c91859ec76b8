#!/usr/bin/env bash
# Every file write of a short training run failing in turn (issue 44):
# TT_FAULT=write:N makes the Nth write of the process fail as a full disk
# would.  For each N, until a run writes fewer than N files:
#   - the run stops with a non-zero status and says "No space left on device"
#     (or, for a file it can do without, the report, says so and goes on);
#   - no temporary file is left, every checkpoint and JSON file there is whole
#     (it parses), and train.jsonl is JSON Lines;
#   - the run resumed from its last checkpoint (or run again when it has
#     none) ends with the uninterrupted run's weights, bit for bit.
# The run: 3 steps with a checkpoint after each, a validation after the
# second, the tile cache in a folder of its own (so its entries are written
# too).  usage: tests/fault/check.sh BUILD_DIR
set -uo pipefail
tt=$(cd "${1:?usage: check.sh BUILD_DIR}" && pwd)/tiletrain
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$tt" data synth --out "$work/data" --format kaggle-rle --count 6 --size 64x96 --classes 2 \
  --seed 3 >/dev/null || { echo "FAIL: data synth"; exit 1; }
run=(train --data "$work/data" --plan off --tile 32x32 --micro-batch 2 --accum 1 --steps 3
     --base-channels 4 --depth 2 --groups 2 --val-fraction 0.34 --val-every 2
     --checkpoint-every 1 --no-augment --seed 3 --quiet)
"$tt" "${run[@]}" --out "$work/ref" --cache-dir "$work/ref_tiles" 2>"$work/err" ||
  { echo "FAIL: the uninterrupted run"; cat "$work/err"; exit 1; }

# whole DIR...: no temporary file, every .safetensors and .json parses,
# train.jsonl is JSON Lines
whole() {
  [ -z "$(find "$@" -name '*.tmp.*' 2>/dev/null)" ] || { echo "temporary files left:"; find "$@" -name '*.tmp.*'; return 1; }
  /usr/bin/python3 - "$@" <<'PY'
import glob, json, os, struct, sys
for d in sys.argv[1:]:
    for p in glob.glob(os.path.join(d, "**", "*"), recursive=True):
        if p.endswith(".safetensors"):
            with open(p, "rb") as f:
                n = struct.unpack("<Q", f.read(8))[0]
                header = json.loads(f.read(n))
                end = max(v["data_offsets"][1] for k, v in header.items() if k != "__metadata__")
            assert os.path.getsize(p) == 8 + n + end, p
        elif p.endswith(".json"):
            json.load(open(p))
        elif p.endswith(".jsonl"):
            [json.loads(l) for l in open(p)]
PY
}

walked=0
for n in $(seq 1 200); do
  rm -rf "$work/run" "$work/tiles"
  TT_FAULT=write:$n "$tt" "${run[@]}" --out "$work/run" --cache-dir "$work/tiles" >"$work/out" 2>"$work/err"
  rc=$?
  if [ "$rc" = 0 ]; then
    # a write the run goes on without (the report), said on stderr; or
    # fewer than n writes: either way the weights are the uninterrupted run's
    /usr/bin/python3 "$here/../cli/same_checkpoint.py" --tol 0 "$work/ref/last.safetensors" \
      "$work/run/last.safetensors" >"$work/same" 2>&1 || { fail "write $n: exit 0, other weights"; cat "$work/same"; }
    grep -q "No space left on device" "$work/err" || break
    walked=$n
    whole "$work/run" "$work/tiles" >"$work/whole" 2>&1 || { fail "write $n: a file is not whole"; cat "$work/whole"; }
    echo "ok:   write $n failed and the run went on: $(head -1 "$work/err" | cut -c1-60)...; the same weights"
    continue
  fi
  walked=$n
  grep -q "No space left on device" "$work/err" || { fail "write $n: exit $rc without the disk's error:"; cat "$work/err"; continue; }
  whole "$work/run" "$work/tiles" >"$work/whole" 2>&1 || { fail "write $n: a file is not whole"; cat "$work/whole"; }
  resume=()
  [ -f "$work/run/last.safetensors" ] && resume=(--resume "$work/run/last.safetensors")
  if "$tt" "${run[@]}" --out "$work/run" --cache-dir "$work/tiles" "${resume[@]}" 2>"$work/err2" &&
     /usr/bin/python3 "$here/../cli/same_checkpoint.py" --tol 0 "$work/ref/last.safetensors" \
       "$work/run/last.safetensors" >"$work/same" 2>&1
  then
    what=$(grep -o "writing '[^']*'" "$work/err" | head -1 | sed "s|.*/||; s|\.tmp\..*||")
    echo "ok:   write $n ($what) failed with a clear error; $([ ${#resume[@]} = 0 ] && echo "run again" || echo "resumed from last.safetensors"): the same weights"
  else fail "write $n: the run after the failure"; cat "$work/err" "$work/err2" "$work/same"; fi
done
[ "$walked" -ge 5 ] || fail "only $walked writes walked: the knob does not reach the run's files"
[ "$failures" = 0 ] || { echo "$failures check(s) failed over $walked writes"; exit 1; }
echo "every one of the run's $walked file writes failed in turn: clear errors, whole files, the same weights after"

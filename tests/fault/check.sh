#!/usr/bin/env bash
# Failures in turn at every file write, device allocation and (a spread of)
# kernel launches of a short training run (issue 44): TT_FAULT=KIND:N makes
# the Nth call of that kind fail as the real failure would (a full disk,
# device memory running out, a lost device; src/core/fault.h).  For each N:
#   - the run ends with a non-zero status and an error naming what failed
#     (never a crash or an abort), or, for a file it can do without (the
#     report), says so and goes on;
#   - no temporary file is left, every checkpoint and JSON file there is
#     whole (it parses), and train.jsonl is JSON Lines;
#   - the run resumed from its last checkpoint (or run again when it has
#     none) ends with the uninterrupted run's weights, bit for bit.
# Writes and allocations are walked one by one, launches at LAUNCH_POINTS
# (default 24) places spread over the run's; the counts are found first.
# The run: 3 steps with a checkpoint after each, a validation after the
# second, its own tile cache (its entries are written too), --algo direct
# (the autotuner, which drops a candidate that fails, is not in the way).
# usage: tests/fault/check.sh BUILD_DIR
set -uo pipefail
tt=$(cd "${1:?usage: check.sh BUILD_DIR}" && pwd)/tiletrain
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
marker='No space left on device\|(TT_FAULT)'

"$tt" data synth --out "$work/data" --format kaggle-rle --count 6 --size 64x96 --classes 2 \
  --seed 3 >/dev/null || { echo "FAIL: data synth"; exit 1; }
run=(train --data "$work/data" --plan off --tile 32x32 --micro-batch 2 --accum 1 --steps 3
     --base-channels 4 --depth 2 --groups 2 --val-fraction 0.34 --val-every 2
     --checkpoint-every 1 --no-augment --seed 3 --quiet --algo direct)
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
same() {
  /usr/bin/python3 "$here/../cli/same_checkpoint.py" --tol 0 "$work/ref/last.safetensors" \
    "$work/run/last.safetensors" >"$work/same" 2>&1
}

# faulted KIND N: runs with the Nth call of KIND failing; sets rc; 0 when
# the fault fired (its error on stderr), 1 when the run made fewer calls
faulted() {
  rm -rf "$work/run" "$work/tiles"
  TT_FAULT=$1:$2 "$tt" "${run[@]}" --out "$work/run" --cache-dir "$work/tiles" >/dev/null 2>"$work/err"
  rc=$?
  grep -q "$marker" "$work/err"
}

# check KIND N: one fault, and the run after it
check() {
  if ! faulted "$1" "$2"; then
    if [ "$rc" != 0 ]; then fail "$1 $2: exit $rc without the fault's error:"; cat "$work/err"; fi
    return 1
  fi
  if [ "$rc" -ge 128 ]; then fail "$1 $2: killed by signal $((rc - 128))"; cat "$work/err"; return 0; fi
  whole "$work/run" "$work/tiles" >"$work/whole" 2>&1 || { fail "$1 $2: a file is not whole"; cat "$work/whole"; }
  local what how
  what=$(grep -m1 "$marker" "$work/err" | cut -c1-100)
  if [ "$rc" = 0 ]; then
    same && echo "ok:   $1 $2 failed and the run went on ($what); the same weights" ||
      { fail "$1 $2: the run went on to other weights"; cat "$work/same"; }
    return 0
  fi
  local resume=()
  [ -f "$work/run/last.safetensors" ] && resume=(--resume "$work/run/last.safetensors")
  how=$([ ${#resume[@]} = 0 ] && echo "run again" || echo "resumed")
  if "$tt" "${run[@]}" --out "$work/run" --cache-dir "$work/tiles" "${resume[@]}" 2>"$work/err2" && same
  then echo "ok:   $1 $2: $what; $how: the same weights"
  else fail "$1 $2: the run after the failure"; cat "$work/err" "$work/err2" "$work/same"; fi
  return 0
}

# calls KIND: how many calls of KIND the run makes (the last N that fires)
calls() {
  local lo=0 hi=1
  while faulted "$1" "$hi"; do lo=$hi; hi=$((hi * 2)); done
  while [ $((hi - lo)) -gt 1 ]; do
    local mid=$(((lo + hi) / 2))
    if faulted "$1" "$mid"; then lo=$mid; else hi=$mid; fi
  done
  echo "$lo"
}

summary=()
for kind in write alloc launch; do
  total=$(calls "$kind")
  [ "$total" -ge 1 ] || { fail "no $kind of the run is reached by TT_FAULT"; continue; }
  points=$(seq 1 "$total")
  if [ "$kind" = launch ]; then
    k=${LAUNCH_POINTS:-24}
    points=$(/usr/bin/python3 -c "import sys; t, k = int(sys.argv[1]), int(sys.argv[2]); print(' '.join(str(1 + i * (t - 1) // (k - 1)) for i in range(k)))" "$total" "$k" | tr ' ' '\n' | sort -un)
  fi
  walked=0
  for n in $points; do check "$kind" "$n" && walked=$((walked + 1)); done
  summary+=("$kind: $walked of $total")
done
[ "$failures" = 0 ] || { echo "$failures check(s) failed (${summary[*]})"; exit 1; }
echo "faults walked, each a clear error, whole files and the same weights after: ${summary[*]}"

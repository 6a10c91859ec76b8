#!/usr/bin/env bash
# Faults of one rank of a 2-rank training run (issue 44, items 1 and 4):
#   - coll: the Nth MPI collective of one rank fails as a network that
#     dropped it would (TT_FAULT=coll:N on that rank), walked over its
#     collectives (POINTS places, first and last included; 0: every one);
#   - launch: that rank's device is lost at its Nth kernel launch, at
#     POINTS places; submit: at its Nth Vulkan queue submission (Vulkan);
#   - kill: rank 1 is killed with SIGKILL mid-run, once its first
#     checkpoint is there.
# After each: the job ends within 60 s (mpirun's ranks then are killed:
# a hang fails), with a non-zero status and the failed rank named (kill:
# by mpirun, and rank 0, stopped by it, says so and where it waited); no
# temporary file is left and the last checkpoint is whole; resumed from it
# on 2 ranks the run ends with the uninterrupted run's weights bit for bit
# (kill: it trains on), and resumed alone it trains on as well.
# Each on every backend of BACKENDS, against that backend's uninterrupted run.
# usage: tests/fault/mpi.sh BUILD_DIR
#   POINTS (default 8; 0: every call), RANKS (default "1"),
#   KINDS (default "coll launch submit"; a kind a backend never calls is left out),
#   BACKENDS (default "opencl vulkan", or opencl alone where there is no Vulkan device),
#   KILL (default "opencl vulkan": the backends the SIGKILL is walked on; "": none)
source "$(dirname "$0")/lib.sh"
points=${POINTS:-8}
backends=${BACKENDS:-opencl vulkan}
[ -n "${BACKENDS:-}" ] || "$tt" devices 2>/dev/null | grep -q "^ *\*\? *Vulkan" || backends=opencl
export POCL_MAX_PTHREAD_COUNT=1 OMPI_MCA_rmaps_base_oversubscribe=1
# mpi SECONDS SETTING RANK ARGS...: 2 ranks, SETTING (VAR=VALUE) in rank RANK's environment only
mpi() {
  local seconds=$1 setting=$2 rank=$3
  shift 3
  timeout "$seconds" mpirun --oversubscribe --allow-run-as-root -np 2 \
    sh -c '[ "$OMPI_COMM_WORLD_RANK" = "$0" ] && export "$1"; shift; exec "$@"' "$rank" "$setting" "$tt" "$@"
}

"$tt" data synth --out "$work/data" --format kaggle-rle --count 8 --size 64x96 --classes 2 \
  --seed 3 >/dev/null || { echo "FAIL: data synth"; exit 1; }
train=()  # set per backend below

# after WHAT STEPS SAME: the last checkpoint under $work/f resumed on 2 ranks
# to STEPS (SAME=1: the reference's weights bit for bit) and alone.  After
# a kill (SAME=0) rank 0 may have been stopped mid-write: its temporary
# file must be gone once the resumed run has started.
after() {
  local what=$1 steps=$2 resume=()
  whole_files "$work/f" >"$work/whole" 2>&1 || { fail "$what: a file is not whole"; cat "$work/whole"; }
  [ "$3" = 0 ] || no_temporaries "$work/f" >"$work/whole" 2>&1 || { fail "$what: a temporary file was left"; cat "$work/whole"; }
  [ -f "$work/f/last.safetensors" ] && resume=(--resume "$work/f/last.safetensors")
  mkdir -p "$work/f" && cp -r "$work/f" "$work/f1"
  if ! mpi 120 X=0 1 "${train[@]}" --steps "$steps" --out "$work/f" "${resume[@]}" >"$work/err2" 2>&1; then
    fail "$what: resumed on 2 ranks"; cat "$work/err2"
  elif ! no_temporaries "$work/f" >"$work/whole" 2>&1; then
    fail "$what: resumed on 2 ranks, a temporary file was left"; cat "$work/whole"
  elif [ "$3" = 1 ] && ! $py "$here/../cli/same_checkpoint.py" --tol 0 "$work/ref_$backend/last.safetensors" \
         "$work/f/last.safetensors" >"$work/same" 2>&1; then
    fail "$what: resumed on 2 ranks, other weights"; cat "$work/same"
  fi
  [ -f "$work/f1/last.safetensors" ] && resume=(--resume "$work/f1/last.safetensors")
  timeout 120 "$tt" "${train[@]}" --steps "$steps" --out "$work/f1" "${resume[@]}" >"$work/err2" 2>&1 &&
    [ -s "$work/f1/last.safetensors" ] || { fail "$what: resumed alone"; cat "$work/err2"; }
}

# check RANK KIND N: rank RANK's Nth call of KIND fails
check() {
  local rank=$1 kind=$2 n=$3
  rm -rf "$work/f" "$work/f1"
  mpi 60 "TT_FAULT=$kind:$n" "$rank" "${train[@]}" --steps 3 --out "$work/f" >"$work/out" 2>&1
  local rc=$?
  if [ "$rc" = 124 ]; then fail "$backend rank $rank $kind $n: the job did not end within 60 s"; cat "$work/out"; return; fi
  if [ "$rc" = 0 ] || ! grep -q "error: rank $rank of 2: .*(TT_FAULT)" "$work/out"; then
    fail "$backend rank $rank $kind $n: exit $rc, the failed rank not named"; cat "$work/out"; return
  fi
  after "$backend rank $rank $kind $n" 3 1
  [ -n "${VERBOSE:-}" ] && echo "ok:   $backend rank $rank $kind $n: $(grep -m1 "error: rank" "$work/out" | cut -c1-100)"
  return 0
}

summary=()
for backend in $backends; do
  train=(train --data "$work/data" --plan off --tile 32x32 --micro-batch 2 --accum 2 --base-channels 4
         --depth 2 --groups 2 --val-fraction 0.25 --val-every 2 --checkpoint-every 1 --no-augment
         --seed 3 --quiet --algo direct --backend "$backend" --cache-dir "$work/tiles")
  if ! mpi 120 TT_FAULT=count 1 "${train[@]}" --steps 3 --out "$work/ref_$backend" 2>"$work/err"; then
    fail "$backend: the uninterrupted 2-rank run"; cat "$work/err"; continue
  fi
  counts=$(grep -m1 "^TT_FAULT counts:" "$work/err")
  for kind in ${KINDS:-coll launch submit}; do
    total=$(echo "$counts" | sed -n "s/.* $kind \([0-9]*\).*/\1/p")
    [ "${total:-0}" -ge 1 ] || continue
    walked=0
    for rank in ${RANKS:-1}; do
      for n in $(spread "$total" "$points"); do
        check "$rank" "$kind" "$n"
        walked=$((walked + 1))
      done
    done
    summary+=("$backend $kind $walked of rank 1's $total")
  done
  [[ " ${KILL-opencl vulkan} " == *" $backend "* ]] || continue

  # rank 1 killed with SIGKILL mid-run: mpirun notices, stops rank 0 and names rank 1
  rm -rf "$work/f" "$work/f1"
  mpi 60 X=0 1 "${train[@]}" --steps 100000 --out "$work/f" >"$work/out" 2>&1 &
  job=$!
  for _ in $(seq 600); do [ -s "$work/f/last.safetensors" ] && break; sleep 0.1; done
  victim=""
  for p in $(pgrep -f "tiletrain train.*$work/f"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && victim=$p
  done
  [ -n "$victim" ] && kill -9 "$victim"
  wait $job
  rc=$?
  if [ -z "$victim" ]; then fail "$backend kill: no rank 1 to kill"; cat "$work/out"
  elif [ "$rc" = 124 ]; then fail "$backend kill: the job did not end within 60 s"; cat "$work/out"
  elif [ "$rc" = 0 ] || ! grep -q "rank 1 with PID .* signal 9" "$work/out"; then fail "$backend kill: exit $rc, rank 1 not named"; cat "$work/out"
  elif ! grep -q "error: rank 0 of 2: stopped by SIGTERM" "$work/out"; then
    fail "$backend kill: rank 0, stopped by mpirun, did not say so"; cat "$work/out"
  else
    step=$(checkpoint_step "$work/f/last.safetensors")
    after "$backend kill at step $step" $((step + 2)) 0
    summary+=("$backend kill after step $step; rank 0 $(grep -m1 -o "stopped by SIGTERM[^;:]*" "$work/out")")
  fi
done

[ "$failures" = 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "2 ranks, faults on one: each job ended naming it, the checkpoint whole, resumed on 2 and 1:"
printf '  %s\n' "${summary[@]}"

#!/usr/bin/env bash
# The network between the 2 ranks of a training run cut for real (issue 44,
# item 4), not simulated: the ranks talk over Open MPI's TCP transport alone
# (btl tcp,self on lo, no shared memory, its ports in a range of their own),
# and once the first checkpoint is there `ss -K` kills their TCP
# connections from outside (the kernel aborts both ends, as a reset
# network would), and every connection they make again, every 0.2 s, as
# a network that stays down (cut once, Open MPI at times connects again
# and trains on).  Mostly Open MPI prints the failed readv/writev and
# waits on in the collective, and tiletrain's watchdog (TT_MPI_TIMEOUT,
# set to TIMEOUT here) must stop the job; when the cut meets a send in
# flight, Open MPI ends that rank itself (its "FATAL" line) and mpirun
# stops the other with SIGTERM, which tiletrain reports.  Checked:
#   - the job ends within TIMEOUT + 30 s of the cut, with a non-zero status
#     and an error naming a rank and the collective it waited in (the
#     watchdog's, or the SIGTERM's of the rank mpirun stopped), or Open
#     MPI's own abort of both ranks;
#   - the last checkpoint is whole and no temporary file is left;
#   - resumed from it on 2 ranks and alone, the run trains on 2 more steps.
# Exits 77 (a skip) where no connection can be cut: no `ss`, or `ss -K`
# kills nothing (it needs CAP_NET_ADMIN and a kernel with
# CONFIG_INET_DIAG_DESTROY).
# usage: tests/fault/net.sh BUILD_DIR
#   TIMEOUT (TT_MPI_TIMEOUT of the cut run, default 5; 0 shows the hang it
#   prevents), BACKEND (default opencl)
source "$(dirname "$0")/lib.sh"
timeout_s=${TIMEOUT:-5}
backend=${BACKEND:-opencl}
bound=$((timeout_s + 30))
export POCL_MAX_PTHREAD_COUNT=1 OMPI_MCA_rmaps_base_oversubscribe=1

# Can a TCP connection be killed from outside here?  A pair on lo, ss -K on
# it: the client must see the abort.
command -v ss >/dev/null || { echo "skip: no ss (iproute2)"; exit 77; }
probe=$($py - <<'PY' 2>&1
import socket, subprocess
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(1)
port = server.getsockname()[1]
client = socket.create_connection(("127.0.0.1", port))
peer, _ = server.accept()
cut = subprocess.run(["ss", "-K", "dst", "127.0.0.1", "dport", "=", str(port)],
                     capture_output=True, text=True)
client.settimeout(2)
try:
    client.recv(1)
    print("ss -K left the connection open:", cut.returncode, cut.stderr.strip())
except OSError as e:
    print("cut", e.errno)
PY
)
[[ $probe == cut* ]] || { echo "skip: ss -K cannot cut a TCP connection here: $probe"; exit 77; }

"$tt" data synth --out "$work/data" --format kaggle-rle --count 8 --size 64x96 --classes 2 \
  --seed 3 >/dev/null || { echo "FAIL: data synth"; exit 1; }
train=(train --data "$work/data" --plan off --tile 32x32 --micro-batch 2 --accum 2 --base-channels 4
       --depth 2 --groups 2 --val-fraction 0.25 --val-every 2 --checkpoint-every 1 --no-augment
       --seed 3 --quiet --algo direct --backend "$backend" --cache-dir "$work/tiles")
# the ranks' listening ports: a range of this run's own, below the
# kernel's ephemeral ports (32768 up), so that the cut takes their
# connections and nobody else's (mpirun's own stay)
low=$((20000 + ($$ % 700) * 16))
ports="( sport >= :$low and sport < :$((low + 16)) ) or ( dport >= :$low and dport < :$((low + 16)) )"
tcp=(--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo
     --mca btl_tcp_port_min_v4 "$low" --mca btl_tcp_port_range_v4 16)
# mpi SECONDS ARGS...: 2 ranks over TCP
mpi() {
  local seconds=$1
  shift
  timeout "$seconds" mpirun --oversubscribe --allow-run-as-root -np 2 "${tcp[@]}" "$tt" "$@"
}

TT_MPI_TIMEOUT=$timeout_s mpi $((bound + 20)) "${train[@]}" --steps 100000 --out "$work/f" >"$work/out" 2>&1 &
job=$!
for _ in $(seq 600); do [ -s "$work/f/last.safetensors" ] && [ -n "$(ss -Htn "$ports")" ] && break; sleep 0.1; done
links=$(ss -Htn "$ports" | wc -l)
[ "$links" -ge 1 ] || { kill "$job"; wait "$job"; fail "no TCP connection between the ranks to cut"; cat "$work/out"; exit 1; }
cut=$($py -c 'import time; print(time.monotonic())')
while kill -0 "$job" 2>/dev/null; do ss -K "$ports" >/dev/null 2>&1; sleep 0.2; done &
cutter=$!
wait "$job"
rc=$?
wait "$cutter"
took=$($py -c "import time; print(round(time.monotonic() - $cut, 1))")
if [ "$rc" = 0 ]; then fail "the job went on after the cut"; cat "$work/out"
elif [ "$($py -c "print(int($took > $bound))")" = 1 ]; then
  fail "the job ended ${took} s after the cut (exit $rc), not within $bound s"; tail -20 "$work/out"
elif grep -q "error: rank [01] of 2: MPI_.* has not returned in $timeout_s s" "$work/out"; then
  who="$(grep -m1 -o "rank [01] of 2: MPI_[A-Za-z_]* ([^)]*)\|rank [01] of 2: MPI_[A-Za-z_]*" "$work/out") (its watchdog)"
elif grep -q "error: rank [01] of 2: stopped by SIGTERM" "$work/out"; then
  who="$(grep -m1 -o "rank [01] of 2: stopped by SIGTERM[^;:]*" "$work/out") (Open MPI ended the other rank, whose send failed)"
elif [ "$(grep -c "FATAL" "$work/out")" -ge 2 ]; then
  who="Open MPI's abort of both ranks (a send of each failed)"
else
  fail "exit $rc ${took} s after the cut: no rank named"; cat "$work/out"
fi
[ "$failures" = 0 ] || { echo "$failures check(s) failed"; exit 1; }

whole_files "$work/f" >"$work/whole" 2>&1 || { fail "the last checkpoint is not whole"; cat "$work/whole"; }
step=$(checkpoint_step "$work/f/last.safetensors")
cp -r "$work/f" "$work/f1"
mpi 120 "${train[@]}" --steps $((step + 2)) --out "$work/f" --resume "$work/f/last.safetensors" >"$work/err" 2>&1 ||
  { fail "resumed on 2 ranks"; cat "$work/err"; }
no_temporaries "$work/f" >"$work/whole" 2>&1 || { fail "resumed on 2 ranks, a temporary file was left"; cat "$work/whole"; }
timeout 120 "$tt" "${train[@]}" --steps $((step + 2)) --out "$work/f1" --resume "$work/f1/last.safetensors" \
  >"$work/err" 2>&1 || { fail "resumed alone"; cat "$work/err"; }
for d in f f1; do
  got=$(checkpoint_step "$work/$d/last.safetensors")
  [ "$got" = $((step + 2)) ] || fail "resumed ($d): its last checkpoint holds step $got, not $((step + 2))"
done
[ "$failures" = 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "TCP links cut ($links) after step $step: the job ended ${took} s later (exit $rc, TT_MPI_TIMEOUT=$timeout_s) naming $who; the checkpoint whole, resumed on 2 and 1 ranks to step $((step + 2))"

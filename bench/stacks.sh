#!/usr/bin/env bash
# Benchmarks `tpurun stacks` on a pod of 32 workers against `tpurun exec --
# true` on the same pod, side by side in one run (issue 36: stacks costs at
# most 2x exec -- true). Not a test (timings depend on the machine); run it by
# hand, as root, with nothing else using the simulator, or on one of its own:
#
#   bench/stacks.sh                     # 32 workers, 7 repetitions
#   WORKERS=64 REPS=11 bench/stacks.sh
#   FAKEPOD_STATE=/var/lib/tpurun-fakepod-st FAKEPOD_NET=127.29 FAKEPOD_NFS=/srv/tpurun-st bench/stacks.sh
#
# It brings the pod simulator up with $WORKERS workers (and leaves it as it
# found it), stages alice's fake trainer hung on every worker (train.py
# --hang, w1 in a checkpoint write, a loader thread, libtpu's metrics
# served), then runs `stacks RUN` and `exec -- true`, interleaved, REPS
# times, and prints their medians and the ratio. The run is killed at exit.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
WORKERS=${WORKERS:-32}
REPS=${REPS:-7}
TPURUN_BIN=${TPURUN_BIN:-$root/build/tpurun}
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"

bench_pod_up stacks
trap bench_pod_restore EXIT
bench_trainer_run --hang --hang-odd 1 --loader-thread
run_id=$bench_run
echo "run $run_id on $WORKERS workers" >&2

# Every worker's job must hang in Python, or the bench measures nothing.
for _ in $(seq 120); do
  taken=$(tp stacks "$run_id" --json | /usr/bin/python3 -c '
import json,sys; d=json.load(sys.stdin); print(sum(w["has_stack"] for w in d["workers"]))' || echo 0)
  [[ $taken == "$WORKERS" ]] && break
  sleep 0.5
done
[[ $taken == "$WORKERS" ]] || { echo "stacks taken on only $taken of $WORKERS workers" >&2; exit 1; }

results=$work/times.txt
: >"$results"
run_stacks() { tp stacks "$run_id" >/dev/null; }
run_exec() { tp exec -- true >/dev/null; }
run_exec
for ((r = 1; r <= REPS; r++)); do
  timed stacks run_stacks
  timed exec run_exec
  echo "repetition $r/$REPS done" >&2
done

/usr/bin/python3 - "$results" "$WORKERS" "$root/bench" <<'PY'
import sys
results, workers = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, sys.argv[3])
from bench_times import load
times, med = load(results)
print(f"{workers} workers, {len(times['stacks'])} repetitions, medians:")
for label in ("stacks", "exec"):
    print(f"  {label:16} {med[label]:.3f}s (min {min(times[label]):.3f}s, max {max(times[label]):.3f}s)")
r = med["stacks"] / med["exec"]
print(f"stacks / exec -- true = {r:.2f}  (target <= 2: {'met' if r <= 2 else 'MISSED'})")
PY

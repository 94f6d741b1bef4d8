#!/usr/bin/env bash
# Benchmarks `tpurun profile` on a pod of 32 workers: how well the traces line
# up (the spread of their start times, read from the traces themselves: the
# "profile_start_time" each server recorded) and what the command costs
# beyond --duration, against one `tpurun top` refresh of the same pod. Not a
# test (timings depend on the machine); run it by hand, as root, with nothing
# else using the simulator, or on a simulator of its own:
#
#   bench/profile.sh                    # 32 workers, 7 repetitions, --duration 1s
#   WORKERS=64 REPS=11 bench/profile.sh
#   FAKEPOD_STATE=/var/lib/tpurun-fakepod-pf FAKEPOD_NET=127.28 FAKEPOD_NFS=/srv/tpurun-pf bench/profile.sh
#
# It brings the pod simulator up with $WORKERS workers (and leaves it as it
# found it), stages alice's fake trainer on every worker with its profiler
# server on port 9999 (examples/trainer/profiler_server.py), then runs
# `profile --duration 1s` and `top`, interleaved, REPS times, and prints:
#   start spread (max - min of the traces' start times) <= 100 ms
#   profile wall time - duration <= 1.5 x one top refresh
# The run is killed at exit.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
WORKERS=${WORKERS:-32}
REPS=${REPS:-7}
DURATION_MS=${DURATION_MS:-1000}
TPURUN_BIN=${TPURUN_BIN:-$root/build/tpurun}
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"

bench_pod_up profile
trap bench_pod_restore EXIT

tp() { (cd "$work/proj" && bench_as alice "$bin" --config "$FAKEPOD_CONFIG" "$@" </dev/null); }

bench_trainer_run --forever --step-time 0.05 --profiler-port 9999
run_id=$bench_run
echo "run $run_id on $WORKERS workers" >&2

# Every worker's server must answer, or the bench measures nothing.
for _ in $(seq 60); do
  written=$(tp profile "$run_id" -d 10ms --json | python3 -c '
import json,sys; d=json.load(sys.stdin); print(sum(w["outcome"] == "written" for w in d["workers"]))' || echo 0)
  [[ $written == "$WORKERS" ]] && break
  sleep 0.5
done
[[ $written == "$WORKERS" ]] || { echo "only $written of $WORKERS workers wrote a trace" >&2; exit 1; }

results=$work/times.txt
docs=$work/docs
: >"$results"
install -d "$docs"
run_profile() { tp profile "$run_id" --duration "${DURATION_MS}ms" --json >"$docs/$r.json"; }
run_top() { tp top >/dev/null; }
run_top
for ((r = 1; r <= REPS; r++)); do
  timed profile run_profile
  timed top run_top
  echo "repetition $r/$REPS done" >&2
done

/usr/bin/python3 - "$results" "$docs" "$WORKERS" "$DURATION_MS" "$root/bench" "$root/examples/trainer" <<'PY'
import json, os, statistics, sys
results, docs, workers, duration_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, sys.argv[5])
sys.path.insert(0, sys.argv[6])
from bench_times import load
from tpu_info.proto import xplane_pb2
times, med = load(results)

def start_time(path):
    space = xplane_pb2.XSpace.FromString(open(path, "rb").read())
    env = [p for p in space.planes if p.name == "Task Environment"][0]
    names = {m.id: m.name for m in env.stat_metadata.values()}
    return {names[s.metadata_id]: s.uint64_value for s in env.stats}["profile_start_time"]

spreads, lates = [], []
for name in sorted(os.listdir(docs)):
    d = json.load(open(os.path.join(docs, name)))
    starts = [start_time(w["path"]) for w in d["workers"] if w["outcome"] == "written"]
    assert len(starts) == workers, (len(starts), workers)
    spreads.append((max(starts) - min(starts)) / 1e6)
    lates.append((max(starts) - d["start_timestamp_ns"]) / 1e6)
cost = [t - duration_ms / 1000 for t in times["profile"]]
print(f"{workers} workers, {len(spreads)} captures of {duration_ms} ms, medians:")
print(f"  start spread     {statistics.median(spreads):7.1f} ms   (max {max(spreads):.1f} ms; target <= 100 ms: "
      f"{'met' if max(spreads) <= 100 else 'MISSED'})")
print(f"  last start after the asked start time {statistics.median(lates):.1f} ms (max {max(lates):.1f} ms)")
print(f"  profile          {med['profile']:.3f}s wall, {statistics.median(cost):.3f}s beyond --duration "
      f"(min {min(cost):.3f}s, max {max(cost):.3f}s)")
print(f"  top (1 refresh)  {med['top']:.3f}s (min {min(times['top']):.3f}s, max {max(times['top']):.3f}s)")
r = statistics.median(cost) / med["top"]
print(f"profile cost / top = {r:.2f}  (target <= 1.5: {'met' if r <= 1.5 else 'MISSED'})")
PY

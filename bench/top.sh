#!/usr/bin/env bash
# Benchmarks `tpurun top` (every chip's HBM and duty cycle, with its holder)
# against `tpurun status` of the same pod (who holds each worker), and the
# client CPU of `top --watch 2`. Not a test (timings depend on the machine);
# run it by hand, as root, with nothing else using the simulator (e.g. under
# the e2e lock):
#
#   bench/top.sh                       # 32 workers, 7 repetitions, 30s of --watch 2
#   WORKERS=64 REPS=11 WATCH_S=60 bench/top.sh
#   TPURUN_BIN=/path/to/tpurun bench/top.sh
#
# It brings the pod simulator up with $WORKERS workers (and leaves it as it
# found it), starts bob's fake trainer on every worker (each serves libtpu's
# metrics on its own worker's localhost:8431), then, as alice, runs `top` and
# `status`, interleaved, REPS times, and prints the medians and the targets:
#   top / status <= 1.3                 (one refresh: the scan plus the metrics)
#   top --watch 2 client CPU <= 2% of a core (steady state, connections kept)
# Every trainer it starts is killed at exit.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
WORKERS=${WORKERS:-32}
REPS=${REPS:-7}
WATCH_S=${WATCH_S:-30}
TPURUN_BIN=${TPURUN_BIN:-$root/build/tpurun}
KEX=curve25519-sha256
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"

bench_pod_up top
declare -A trainer_pids=()
watch_pid=""

cleanup() {
  set +e
  [[ -n $watch_pid ]] && kill "$watch_pid" 2>/dev/null
  local w
  for w in "${!trainer_pids[@]}"; do
    "$FAKEPOD" exec "$w" -- kill -9 -- "-${trainer_pids[$w]}" >/dev/null 2>&1
    "$FAKEPOD" exec "$w" -- rm -rf /tmp/libtpu_lockfile /tmp/tpu_logs /tmp/bench-trainer.log >/dev/null 2>&1
  done
  bench_pod_restore
}
trap cleanup EXIT

# The trainer with its metrics service (train.py, libtpu_metrics.py, tpu_info/).
cp -r "$root/examples/trainer/." "$work/trainer"
chmod -R a+rX "$work/trainer"
for ((w = 0; w < WORKERS; w++)); do
  # shellcheck disable=SC2016
  trainer_pids[$w]=$("$FAKEPOD" exec "$w" --user bob -- bash -c \
    '( exec setsid python3 "$0" --forever --step-time 1 >/tmp/bench-trainer.log 2>&1 </dev/null ) & echo $!' \
    "$work/trainer/train.py")
done

home=$(getent passwd alice | cut -d: -f6)
as_alice() {
  setpriv --reuid=alice --regid="$(id -g alice)" --init-groups -- env -i HOME="$home" USER=alice LOGNAME=alice \
    PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 TPURUN_SSH_KEX="$KEX" "$@" </dev/null
}
run_top() { as_alice "$bin" --config "$FAKEPOD_CONFIG" top >/dev/null; }
run_status() { as_alice "$bin" --config "$FAKEPOD_CONFIG" status >/dev/null || [[ $? == 1 ]]; }

# Every worker must serve figures (and be seen held), or the bench measures nothing.
for _ in $(seq 100); do
  served=$(as_alice "$bin" --config "$FAKEPOD_CONFIG" top --json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["summary"]["with_figures"])' || echo 0)
  [[ $served == "$WORKERS" ]] && break
  sleep 0.3
done
[[ $served == "$WORKERS" ]] || { echo "top sees figures on $served of $WORKERS workers" >&2; exit 1; }

results=$work/times.txt
: >"$results"
run_top
run_status
for ((r = 1; r <= REPS; r++)); do
  timed top run_top
  timed status run_status
  echo "repetition $r/$REPS done" >&2
done

# top --watch 2: the client's CPU over WATCH_S seconds of steady state (after
# a 10s start: connecting to every worker is the first refresh's cost).
tick=$(getconf CLK_TCK)
as_alice "$bin" --config "$FAKEPOD_CONFIG" top --watch 2 >/dev/null 2>&1 &
shell_pid=$!
sleep 10
# as_alice runs in a subshell: tpurun is its child (setpriv and env exec into it).
watch_pid=$(pgrep -P "$shell_pid" | head -1)
[[ $(readlink "/proc/$watch_pid/exe") == "$bin" ]] || { echo "no top --watch process under $shell_pid" >&2; exit 1; }
cpu() { awk '{print $14 + $15}' "/proc/$watch_pid/stat"; }
c0=$(cpu)
t0=$(date +%s%N)
sleep "$WATCH_S"
c1=$(cpu)
t1=$(date +%s%N)
kill "$watch_pid"
wait "$shell_pid" 2>/dev/null || true
watch_pid=""

python3 - "$results" "$WORKERS" "$c0" "$c1" "$t0" "$t1" "$tick" "$root/bench" <<'PY'
import sys
results, workers, c0, c1, t0, t1, tick = sys.argv[1:8]
sys.path.insert(0, sys.argv[8])
from bench_times import load
times, med = load(results)
print(f"{workers} workers, each with a trainer serving metrics, {len(times['top'])} repetitions, medians:")
for k in ("top", "status"):
    print(f"  {k:<7} {med[k]:.3f}s   (min {min(times[k]):.3f}s, max {max(times[k]):.3f}s)")
r = med["top"] / med["status"]
print(f"top / status = {r:.2f}  (target <= 1.3: {'met' if r <= 1.3 else 'MISSED'})")
wall = (int(t1) - int(t0)) / 1e9
cpu = (int(c1) - int(c0)) / int(tick)
share = 100 * cpu / wall
print(f"top --watch 2: {cpu:.2f}s CPU in {wall:.1f}s = {share:.1f}% of a core "
      f"(target <= 2%: {'met' if share <= 2 else 'MISSED'})")
PY

#!/usr/bin/env bash
# Benchmarks the gang rule on the pod simulator (not a test: timings depend on
# the machine). Run by hand as root:
#
#   bench/gang.sh                 # 32 workers, 3 repetitions
#   WORKERS=8 REPS=5 bench/gang.sh
#
# It prints, as alice with detached runs:
#   1. exit: from one worker's non-zero exit (its exit record's mtime) to every
#      other worker's job gone (the last exit record's mtime)      target <= 5s
#   2. lost host: from `fakepod stop-worker` to every other job gone, with
#      --lost-after 10s                                  target <= lost-after + 10s
#   3. the idle cost of watching one run for 60s: the watcher's CPU on the dev
#      VM (target <= 1% of a core) and, per worker, the CPU of the user's sshd
#      session that serves the liveness probes.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
WORKERS=${WORKERS:-32}
REPS=${REPS:-3}
IDLE=${IDLE:-60}
TPURUN_BIN=${TPURUN_BIN:-$root/build/tpurun}
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
bench_pod_up gang
install -d -o alice -g "$(id -gn alice)" "$work/proj"
install -m 644 -o alice "$root/examples/trainer/train.py" "$work/proj/train.py"
runs=()

cleanup() {
  set +e
  for r in "${runs[@]}"; do tp kill --run "$r" --grace 1s >/dev/null 2>&1; done
  "$FAKEPOD" start-worker 3 >/dev/null 2>&1
  bench_pod_restore
}
trap cleanup EXIT

tp() {
  (cd "$work/proj" && setpriv --reuid=alice --regid="$(id -g alice)" --init-groups -- \
    env -i HOME="$(getent passwd alice | cut -d: -f6)" USER=alice LOGNAME=alice PATH=/usr/bin:/bin \
    "$bin" --config "$FAKEPOD_CONFIG" "$@" </dev/null)
}
stage() {  # ARGS...: prints the run id
  local out
  out=$(tp stage --detach --json "$@")
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])["log_dir"])' "$out"
}
wait_files() {  # DIR PATTERN COUNT
  for _ in $(seq 1200); do
    (( $(ls "$1"/$2 2>/dev/null | wc -l) >= $3 )) && return 0
    sleep 0.1
  done
  echo "timed out waiting for $3 x $2 in $1" >&2
  return 1
}
mtimes() { python3 -c 'import os,sys; print(" ".join(str(os.stat(p).st_mtime) for p in sys.argv[1:]))' "$@"; }
median() { tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "gang benchmark: $WORKERS workers, $REPS repetitions"
exit_times=() lost_times=()
for _ in $(seq "$REPS"); do
  dir=$(stage -- sh -c 'if [ "$TPURUN_WORKER" = 1 ]; then sleep 3; exit 3; fi; exec python3 train.py --forever')
  runs+=("$(basename "$dir")")
  wait_files "$dir" 'worker*.exit' "$WORKERS"
  read -r failed <<<"$(mtimes "$dir/worker1.exit")"
  last=$(mtimes "$dir"/worker*.exit | tr ' ' '\n' | sort -g | tail -1)
  exit_times+=("$(python3 -c "print(round($last - $failed, 2))")")

  dir=$(stage --lost-after 10s -- python3 train.py --forever)
  runs+=("$(basename "$dir")")
  wait_files "$dir" 'worker*.pid' "$WORKERS"
  sleep 2
  t0=$(date +%s.%N)
  "$FAKEPOD" stop-worker 3 >/dev/null
  wait_files "$dir" 'worker*.exit' "$((WORKERS - 1))"
  last=$(ls "$dir"/worker*.exit | xargs python3 -c 'import os,sys; print(max(os.stat(p).st_mtime for p in sys.argv[1:]))')
  lost_times+=("$(python3 -c "print(round($last - $t0, 2))")")
  "$FAKEPOD" start-worker 3 >/dev/null
done
echo "exit -> every other job gone:  ${exit_times[*]} s  (median $(echo "${exit_times[*]}" | median) s; target <= 5 s)"
echo "lost host -> every other job gone (--lost-after 10s): ${lost_times[*]} s  (median $(echo "${lost_times[*]}" | median) s; target <= 20 s)"

# Idle cost of watching one run.
dir=$(stage -- python3 train.py --forever)
runs+=("$(basename "$dir")")
wait_files "$dir" 'worker*.pid' "$WORKERS"
sleep 5
watcher=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["supervisor"]["pid"])' "$dir/state.json")
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
sshd_cpu() {  # the sum over workers of alice's sshd session processes' CPU ticks
  local total=0 i t
  for i in $(seq 0 $((WORKERS - 1))); do
    t=$("$FAKEPOD" exec "$i" -- sh -c 'for p in $(pgrep -f "sshd: alice"); do awk "{print \$14 + \$15}" /proc/$p/stat; done' \
      2>/dev/null | awk '{s += $1} END {print s + 0}')
    total=$((total + t))
  done
  echo "$total"
}
hz=$(getconf CLK_TCK)
w0=$(cpu "$watcher") s0=$(sshd_cpu)
sleep "$IDLE"
w1=$(cpu "$watcher") s1=$(sshd_cpu)
python3 - "$w0" "$w1" "$s0" "$s1" "$hz" "$IDLE" "$WORKERS" <<'PY'
import sys
w0, w1, s0, s1, hz, idle, n = map(float, sys.argv[1:])
print(f"watching one {int(n)}-worker run for {int(idle)}s: watcher {100 * (w1 - w0) / hz / idle:.2f}% of a core "
      f"(target <= 1%); per worker sshd {100 * (s1 - s0) / hz / idle / n:.3f}% of a core")
PY

#!/usr/bin/env bash
# Benchmarks the team's board (not a test: timings depend on the machine). Run
# it by hand, as root, while nothing else uses the pod simulator:
#
#   bench/board.sh                          # 8 pods x 4 workers, 7 repetitions
#   PODS=4 PER_POD=8 REPS=11 REFRESHES=30 bench/board.sh
#   TPURUN_BIN=/path/to/tpurun bench/board.sh
#
# It brings the simulator up with PODS x PER_POD workers (restoring the
# previous size at exit), writes a config with PODS pods of PER_POD workers
# each, starts bob's fake trainer on worker 1 so the board has a holder, then
# as alice, interleaved, REPS times:
#   all:        tpurun status --all
#   sequential: tpurun status --pod X, for each pod one after the other
#   one_pod:    tpurun status of one pod with all those workers (the floor:
#               the same scans in one process, without any per-pod work)
# and prints the medians and all / sequential (target <= 0.3).
# Last, `status --all --watch 1` piped: the tpurun process's CPU (utime +
# stime from /proc) over REFRESHES refreshes after the first, per refresh,
# next to the CPU of one `status --all` (which connects afresh); and with
# `--watch 100ms` (refreshes back to back) the wall time of a refresh on the
# kept connections.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
PODS=${PODS:-8}
PER_POD=${PER_POD:-4}
REPS=${REPS:-7}
REFRESHES=${REFRESHES:-20}
TPURUN_BIN=${TPURUN_BIN:-$root/build/tpurun}
WORKERS=$((PODS * PER_POD))
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
bench_pod_up board
trainer_pid="" watch_pid=""

cleanup() {
  set +e
  [[ -n $watch_pid ]] && kill "$watch_pid" 2>/dev/null
  if [[ -n $trainer_pid ]]; then "$FAKEPOD" exec 1 -- kill -9 -- "-$trainer_pid" >/dev/null 2>&1; fi
  "$FAKEPOD" exec 1 -- rm -rf /tmp/libtpu_lockfile /tmp/tpu_logs /tmp/bench-trainer.log >/dev/null 2>&1
  bench_pod_restore
}
trap cleanup EXIT

# The config: pods board-0 .. board-<PODS-1>, PER_POD workers each; host keys known up front.
known=$work/known_hosts
python3 - "$work/board.json" "$known" "$PODS" "$PER_POD" "$FAKEPOD_NFS" <<'PY'
import json, sys
path, known, pods, per, nfs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
ip = lambda i: f"127.0.{1 + i // 250}.{1 + i % 250}"
ssh = {"identity_file": "~/.ssh/id_ed25519", "known_hosts": known, "host_key_policy": "accept-new",
       "connect_timeout_s": 5}
cfg = {"pods": {f"board-{p}": {"workers": [ip(p * per + w) for w in range(per)], "ssh": ssh,
                               "staging_root": f"{nfs}/staging", "logs_root": f"{nfs}/logs"}
                for p in range(pods)}}
json.dump(cfg, open(path, "w"), indent=1)
one = {"pods": {"one": {"workers": [ip(i) for i in range(pods * per)], "ssh": ssh,
                        "staging_root": f"{nfs}/staging", "logs_root": f"{nfs}/logs"}}}
json.dump(one, open(path.replace("board.json", "one.json"), "w"), indent=1)
PY
chmod 644 "$work/board.json" "$work/one.json"
for ((i = 0; i < WORKERS; i++)); do echo "127.0.$((1 + i / 250)).$((1 + i % 250))"; done |
  ssh-keyscan -t ed25519 -f - 2>/dev/null >"$known"
chown alice: "$known"

# bob's trainer holds worker 1.
cp "$root/examples/trainer/train.py" "$work/train.py"
chmod 644 "$work/train.py"
# shellcheck disable=SC2016
trainer_pid=$("$FAKEPOD" exec 1 --user bob -- bash -c \
  '( exec setsid python3 "$0" --forever >/tmp/bench-trainer.log 2>&1 </dev/null ) & echo $!' "$work/train.py")

home=$(getent passwd alice | cut -d: -f6)
as_alice() {
  setpriv --reuid=alice --regid="$(id -g alice)" --init-groups -- env -i HOME="$home" USER=alice LOGNAME=alice \
    PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 "$bin" "$@" </dev/null
}
board() { as_alice --config "$work/board.json" "$@"; }
run_all() { board status --all >/dev/null || [[ $? == 1 ]]; }
# The floor: the same workers as one pod, in one scan (no per-pod work at all).
run_one() { as_alice --config "$work/one.json" status >/dev/null || [[ $? == 1 ]]; }
run_sequential() {
  local p
  for ((p = 0; p < PODS; p++)); do board --pod "board-$p" status >/dev/null || [[ $? == 1 ]]; done
}

results=$work/times.txt
: >"$results"

# Warm up, and make sure the board sees bob's job.
for _ in $(seq 100); do
  seen=$(board status --all || true)
  [[ $seen == *"bob: python3"* ]] && break
  sleep 0.1
done
[[ $seen == *"bob: python3"* ]] || { echo "status --all does not see bob's trainer: $seen" >&2; exit 1; }
run_sequential
run_one

for ((r = 1; r <= REPS; r++)); do
  timed all run_all
  timed sequential run_sequential
  timed one_pod run_one
  echo "repetition $r/$REPS done" >&2
done

# One-shot CPU (user + sys of the whole process, children included: there are none).
cpu_once=$( { TIMEFORMAT='%U %S'; time run_all; } 2>&1 | awk '{print $1 + $2}')

# --watch: CPU per refresh once the connections are open.
ticks() { awk '{print $14 + $15}' "/proc/$watch_pid/stat"; }
blocks() { grep -c '^--- ' "$work/watch.out" || true; }
wait_blocks() {  # N
  for _ in $(seq 3000); do
    (($(blocks) >= $1)) && return 0
    sleep 0.02
  done
  echo "--watch did not reach $1 refreshes" >&2
  exit 1
}
start_watch() {  # INTERVAL
  rm -f "$work/watch.pid"
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$work/watch.pid" setpriv --reuid=alice --regid="$(id -g alice)" \
    --init-groups -- env -i HOME="$home" USER=alice PATH=/usr/bin:/bin "$bin" --config "$work/board.json" \
    status --all --watch "$1" >"$work/watch.out" 2>&1 </dev/null &
  for _ in $(seq 100); do [[ -s $work/watch.pid ]] && break; sleep 0.05; done
  watch_pid=$(cat "$work/watch.pid")
}
start_watch 1
wait_blocks 2 # the first refresh (connections made) is done
t0=$(ticks)
wait_blocks $((2 + REFRESHES))
t1=$(ticks)
kill "$watch_pid"
watch_pid=""
# Wall time of a refresh on kept connections: back to back (100ms apart at most).
start_watch 100ms
wait_blocks 2
w0=$(date +%s%N)
wait_blocks $((2 + REFRESHES))
w1=$(date +%s%N)
kill "$watch_pid"
watch_pid=""
hz=$(getconf CLK_TCK)

python3 - "$results" "$PODS" "$PER_POD" "$cpu_once" "$t0" "$t1" "$hz" "$REFRESHES" "$w0" "$w1" "$root/bench" <<'PY'
import sys
res, pods, per, cpu_once, t0, t1, hz, n, w0, w1 = sys.argv[1:11]
sys.path.insert(0, sys.argv[11])
from bench_times import load
times, med = load(res)
print(f"{pods} pods x {per} workers, {len(times['all'])} repetitions, medians:")
for k in ("all", "sequential", "one_pod"):
    print(f"  {k:<11} {med[k]:.3f}s   (min {min(times[k]):.3f}s, max {max(times[k]):.3f}s)")
r = med["all"] / med["sequential"]
print(f"status --all / {pods} sequential status = {r:.2f}  (target <= 0.3: {'met' if r <= 0.3 else 'MISSED'})")
print(f"status --all / one pod of all {int(pods) * int(per)} workers = {med['all'] / med['one_pod']:.2f}  "
      "(the board's own cost; 1.0 is the floor on this machine)")
per_refresh = (int(t1) - int(t0)) / int(hz) / int(n) * 1000
print(f"--watch 1: client CPU {per_refresh:.1f}ms per refresh (over {n} refreshes, connections kept); "
      f"one status --all: {float(cpu_once) * 1000:.0f}ms")
wall = (int(w1) - int(w0)) / 1e9 / int(n)
print(f"--watch refresh wall time, connections kept: {wall:.3f}s  "
      f"(/ status --all {wall / med['all']:.2f}, / {pods} sequential status {wall / med['sequential']:.2f})")
PY

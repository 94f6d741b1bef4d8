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
#   4. preemption -> resumed run (stage --recreate on a 2-worker spot TPU VM of
#      its own, through gcloud against the simulated API): from `fakepod
#      preempt` to attempt 2's pid record, split into detection (until the
#      watcher saw it gone), API time (delete, create, until READY), keys
#      (gcloud's key push and host keys), setup (the pod's setup script) and
#      launch (describe, TPU free, relaunch), from the run's state.json.
#
#   SECTIONS=preempt PREEMPT_REPS=1 bench/gang.sh   # only part 4 (default: all)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
WORKERS=${WORKERS:-32}
REPS=${REPS:-3}
IDLE=${IDLE:-60}
SECTIONS=${SECTIONS:-gang,idle,preempt}
PREEMPT_REPS=${PREEMPT_REPS:-$REPS}
want() { [[ ,$SECTIONS, == *,$1,* ]]; }
TPURUN_BIN=${TPURUN_BIN:-$root/build/tpurun}
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
bench_pod_up gang
install -d -o alice -g "$(id -gn alice)" "$work/proj" "$work/state"  # state: alice's audit log (recreates)
install -m 644 -o alice "$root/examples/trainer/train.py" "$work/proj/train.py"
runs=()

cleanup() {
  set +e
  for r in "${runs[@]}"; do tp kill --run "$r" --grace 1s >/dev/null 2>&1; done
  "$FAKEPOD" start-worker 3 >/dev/null 2>&1
  "$FAKEPOD" delete rcbench --zone "$RC_ZONE" >/dev/null 2>&1
  bench_pod_restore
}
trap cleanup EXIT

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

RC_ZONE=us-central2-b
echo "gang benchmark: $WORKERS workers, $REPS repetitions"
exit_times=() lost_times=()
want gang || REPS=0
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
want gang && echo "exit -> every other job gone:  ${exit_times[*]} s  (median $(echo "${exit_times[*]}" | median) s; target <= 5 s)"
want gang && echo "lost host -> every other job gone (--lost-after 10s): ${lost_times[*]} s  (median $(echo "${lost_times[*]}" | median) s; target <= 20 s)"

# Idle cost of watching one run.
idle_cost() {
dir=$(stage -- python3 train.py --forever)
runs+=("$(basename "$dir")")
wait_files "$dir" 'worker*.pid' "$WORKERS"
sleep 5
watcher=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["watcher"]["pid"])' "$dir/state.json")
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
}
want idle && idle_cost

# Preemption -> resumed run, through gcloud and the simulated Cloud TPU API.
preempt_to_resumed() {
  local setup=$work/setup.sh cfg=$work/recreate.json
  cat >"$setup" <<SH
#!/bin/bash
set -e
[ -n "\$(ls -A $FAKEPOD_NFS)" ] || sudo mount -t fakenfs fakenfs:/ $FAKEPOD_NFS
sudo touch /etc/tpurun-bench-setup
SH
  cat >"$cfg" <<JSON
{ "default_pod": "rcbench", "pods": { "rcbench": { "gcloud": { "name": "rcbench", "zone": "$RC_ZONE", "project": "sim-proj" },
  "ssh": { "identity_file": "~/.ssh/id_ed25519", "connect_timeout_s": 5 },
  "staging_root": "$FAKEPOD_NFS/staging", "logs_root": "$FAKEPOD_NFS/logs", "setup": "$setup" } } }
JSON
  chmod 644 "$setup" "$cfg"
  "$FAKEPOD" create rcbench --zone "$RC_ZONE" --accelerator v4-16 --spot >/dev/null
  CONFIG=$cfg tp exec --script "$setup" >/dev/null
  local rows=() dir t0 r
  for _ in $(seq "$PREEMPT_REPS"); do
    dir=$(CONFIG=$cfg stage --recreate --lost-after 3s -- sleep 600)
    runs+=("$(basename "$dir")")
    wait_files "$dir" 'worker*.pid' 2
    t0=$(date +%s.%N)
    "$FAKEPOD" preempt rcbench --zone "$RC_ZONE" >/dev/null
    wait_files "$dir" 'worker*.a2.pid' 2
    r=$(python3 - "$dir" "$t0" <<'PY'
import json, os, sys
d, t0 = sys.argv[1], float(sys.argv[2])
resumed = max(os.stat(os.path.join(d, f)).st_mtime for f in os.listdir(d) if f.endswith(".a2.pid"))
p = json.load(open(os.path.join(d, "state.json")))["preemptions"][-1]
t = p.get("times_s", {})
total = resumed - t0
detect = total - sum(t.get(k, 0) for k in ("api", "keys", "setup", "launch"))
print(f"{total:.1f} {detect:.1f} {t.get('api', 0):.1f} {t.get('keys', 0):.1f} {t.get('setup', 0):.1f} {t.get('launch', 0):.1f}")
PY
)
    rows+=("$r")
    CONFIG=$cfg tp kill --run "$(basename "$dir")" --grace 1s >/dev/null 2>&1 || true
  done
  printf '%s\n' "${rows[@]}" | python3 -c '
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
med = [statistics.median(c) for c in zip(*rows)]
print("preemption -> resumed run (--recreate, 2-worker spot TPU VM, %d reps): %.1f s median" % (len(rows), med[0]))
print("  detection %.1f s, API %.1f s (delete, create, until READY), keys %.1f s, setup %.1f s, launch %.1f s" % tuple(med[1:]))
print("  each rep (total detect api keys setup launch):", "; ".join(" ".join("%.1f" % v for v in r) for r in rows))'
}
want preempt && preempt_to_resumed

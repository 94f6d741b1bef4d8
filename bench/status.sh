#!/usr/bin/env bash
# Benchmarks `tpurun status` (who holds the TPU on every worker) against the
# cost of reaching the workers at all (`tpurun exec -- true`) and against what
# people run today (`pdsh -R ssh -w ... sudo lsof -w /dev/accel0`). Not a test
# (timings depend on the machine); run it by hand, as root, with nothing else
# using the simulator (e.g. under the e2e lock):
#
#   bench/status.sh                    # light: 32 workers, 7 repetitions
#   WORKERS=64 REPS=11 bench/status.sh
#   bench/status.sh heavy              # busy hosts: 8 workers, 50 procs x 5,000 fds each
#   WORKERS=16 PROCS=50 FDS=5000 REPS=5 bench/status.sh heavy
#   TPURUN_BIN=/path/to/tpurun bench/status.sh
#
# It brings the pod simulator up with $WORKERS workers (and leaves it as it
# found it: down, or at its previous size), starts bob's fake trainer so that
# the scan has a holder to report (light: on worker 1; heavy: on every odd
# worker), then runs the three commands as alice, interleaved, REPS times,
# and prints the medians and the targets:
#   status / exec true <= 1.3          (light)
#   lsof route / status >= 5           (both)
# ssh and tpurun both use curve25519-sha256, so key exchange costs the same.
#
# light, last: the lookup alone on this host's process table, the scan's walk
# (perl, one process: readdir + readlink; find, its fallback) against lsof (on a simulated worker there are only a handful of processes, so
# there SSH dominates both routes).
# heavy: a real TPU host runs hundreds of processes with thousands of fds
# (data loader workers). Every worker gets bob's bench/fd_holder.py: $PROCS
# processes holding $FDS fds each (pipes, sockets, files, /dev/null), inside
# the worker's namespaces; last, both routes on worker 0 alone.
# Every process the bench starts is killed at exit, and its files removed.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
MODE=${1:-light}
case $MODE in
  light) WORKERS=${WORKERS:-32} REPS=${REPS:-7} ;;
  heavy) WORKERS=${WORKERS:-8} REPS=${REPS:-5} PROCS=${PROCS:-50} FDS=${FDS:-5000} ;;
  *) echo "usage: bench/status.sh [light|heavy]" >&2; exit 2 ;;
esac
TPURUN_BIN=${TPURUN_BIN:-$root/build/tpurun}
KEX=curve25519-sha256
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"

for tool in pdsh ssh lsof setpriv python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 2; }
done

if [[ $MODE == heavy ]] && (($(ulimit -Hn) < FDS + 64)); then ulimit -Hn $((FDS + 64)); fi
bench_pod_up status
declare -A trainer_pids=() holder_pgids=()

cleanup() {
  set +e
  local w
  for w in "${!holder_pgids[@]}"; do
    # shellcheck disable=SC2016
    "$FAKEPOD" exec "$w" -- sh -c 'kill -9 -- "-$1"; rm -rf "/tmp/bench-fds.$1"' sh "${holder_pgids[$w]}" \
      >/dev/null 2>&1
  done
  for w in "${!trainer_pids[@]}"; do
    "$FAKEPOD" exec "$w" -- kill -9 -- "-${trainer_pids[$w]}" >/dev/null 2>&1
    "$FAKEPOD" exec "$w" -- rm -rf /tmp/libtpu_lockfile /tmp/tpu_logs /tmp/bench-trainer.log >/dev/null 2>&1
  done
  bench_pod_restore
}
trap cleanup EXIT

# bob's trainer holds worker 1 (light), or every odd worker (heavy).
cp "$root/examples/trainer/train.py" "$work/train.py"
cp "$root/bench/fd_holder.py" "$work/fd_holder.py"
chmod 644 "$work/train.py" "$work/fd_holder.py"
trainer_workers=(1)
[[ $MODE == heavy ]] && mapfile -t trainer_workers < <(seq 1 2 $((WORKERS - 1)))
for w in "${trainer_workers[@]}"; do
  # shellcheck disable=SC2016
  trainer_pids[$w]=$("$FAKEPOD" exec "$w" --user bob -- bash -c \
    '( exec setsid python3 "$0" --forever >/tmp/bench-trainer.log 2>&1 </dev/null ) & echo $!' "$work/train.py")
done
for w in "${trainer_workers[@]}"; do
  for _ in $(seq 100); do
    "$FAKEPOD" exec "$w" -- grep -q holds /tmp/bench-trainer.log 2>/dev/null && break
    sleep 0.1
  done
done

# heavy: bob's data loaders on every worker.
if [[ $MODE == heavy ]]; then
  for ((w = 0; w < WORKERS; w++)); do
    holder_pgids[$w]=$("$FAKEPOD" exec "$w" --user bob -- python3 "$work/fd_holder.py" "$PROCS" "$FDS")
  done
  # shellcheck disable=SC2016
  held=$("$FAKEPOD" exec 0 -- sh -c 'n=0; for p in $(pgrep -s "$1"); do n=$((n + $(ls /proc/$p/fd | wc -l))); done
echo "$(pgrep -s "$1" | wc -l) $n"' sh "${holder_pgids[0]}")
  read -r nprocs nfds <<<"$held"
  ((nprocs == PROCS && nfds >= PROCS * FDS)) || { echo "worker 0 holds $held (processes, fds), not $PROCS x $FDS" >&2; exit 1; }
  echo "each worker: $nprocs processes holding $nfds fds in all" >&2
fi

home=$(getent passwd alice | cut -d: -f6)
hosts=$(python3 -c 'import json,sys; print(",".join(json.load(open(sys.argv[1]))["pods"]["sim"]["workers"]))' \
  "$FAKEPOD_CONFIG")
known=$work/known_hosts
touch "$known"
chown alice: "$known"

as_alice() {
  setpriv --reuid=alice --regid="$(id -g alice)" --init-groups -- env -i HOME="$home" USER=alice LOGNAME=alice \
    PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 TPURUN_SSH_KEX="$KEX" \
    PDSH_SSH_ARGS="-i $home/.ssh/id_ed25519 -o IdentitiesOnly=yes -o BatchMode=yes -o KexAlgorithms=$KEX \
-o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=$known -o GSSAPIAuthentication=no \
-o LogLevel=ERROR -l%u %h" \
    PDSH_RCMD_TYPE=ssh "$@" </dev/null
}

run_status() { as_alice "$bin" --config "$FAKEPOD_CONFIG" status >/dev/null || [[ $? == 1 ]]; }
run_exec() { as_alice "$bin" --config "$FAKEPOD_CONFIG" exec -- true >/dev/null; }
# lsof exits 1 on every worker where nothing holds the device; pdsh says so.
run_lsof() { as_alice pdsh -R ssh -f 64 -w "$hosts" sudo lsof -w /dev/accel0 >/dev/null 2>&1 || true; }

results=$work/times.txt
: >"$results"

# Warm up: host keys recorded, page cache and sudo's first run out of the way.
run_exec
run_status
run_lsof
# Both must see bob's job, or they measure nothing.
seen=$(as_alice "$bin" --config "$FAKEPOD_CONFIG" status --worker 1 || true)
[[ $seen == *busy-other* ]] || { echo "status does not see bob's trainer on w1: $seen" >&2; exit 1; }
seen=$(as_alice pdsh -R ssh -w "$(cut -d, -f2 <<<"$hosts")" sudo lsof -w /dev/accel0 2>&1 || true)
[[ $seen == *python3*bob* ]] || { echo "lsof does not see bob's trainer on w1: $seen" >&2; exit 1; }

for ((r = 1; r <= REPS; r++)); do
  timed status run_status
  timed exec_true run_exec
  timed lsof run_lsof
  echo "repetition $r/$REPS done" >&2
done

if [[ $MODE == light ]]; then
  # The lookup itself, without SSH: on this host's whole process table (a real
  # TPU VM has hundreds of processes; a simulated worker has five), the walk
  # that the scan runs (on one CPU; find where perl is missing) against lsof,
  # all looking for one file a process holds open.
  held=$work/fake-accel0
  : >"$held"
  sleep 600 3<"$held" &
  holder=$!
  # shellcheck disable=SC2016
  lookup_walk() {
    perl -e 'opendir my $p, "/proc"; for my $pid (grep { /^[0-9]+\z/ } readdir $p) {
      chdir "/proc/$pid/fd" and opendir my $h, "." or next;
      for (readdir $h) { my $t = readlink; print "$pid\n" if defined $t and $t eq $ARGV[0] } }' "$held" >/dev/null
  }
  lookup_find() { find /proc/[0-9]*/fd -maxdepth 1 -lname "$held" >/dev/null 2>&1 || true; }
  lookup_lsof() { lsof -w "$held" >/dev/null 2>&1 || true; }
  nproc_lookup=$(ls -d /proc/[0-9]* | wc -l)
  where="this host"
else
  # One busy worker alone (no other worker's scan competing for the CPUs):
  # both routes on worker 0.
  lookup_find() { as_alice "$bin" --config "$FAKEPOD_CONFIG" status --worker 0 >/dev/null || true; }
  lookup_lsof() { as_alice pdsh -R ssh -w "$(cut -d, -f1 <<<"$hosts")" sudo lsof -w /dev/accel0 >/dev/null 2>&1 || true; }
  nproc_lookup=$("$FAKEPOD" exec 0 -- sh -c 'ls -d /proc/[0-9]* | wc -l')
  where="worker 0 alone, both routes"
fi
for ((r = 1; r <= REPS; r++)); do
  [[ $MODE == light ]] && timed host_walk lookup_walk
  timed host_find lookup_find
  timed host_lsof lookup_lsof
done
[[ $MODE == light ]] && kill "$holder"

python3 - "$results" "$WORKERS" "$nproc_lookup" "$where" "$MODE" "${PROCS:-0}" "${FDS:-0}" "$root/bench" <<'PY'
import sys
results, workers, nproc, where, mode, procs, fds = sys.argv[1:8]
sys.path.insert(0, sys.argv[8])
from bench_times import load
times, med = load(results)
load = f", each with {procs} processes x {fds} fds" if mode == "heavy" else ""
print(f"{mode}: {workers} workers{load}, {len(times['status'])} repetitions, medians:")
for k in ("status", "exec_true", "lsof"):
    print(f"  {k:<10} {med[k]:.3f}s   (min {min(times[k]):.3f}s, max {max(times[k]):.3f}s)")
r1 = med["status"] / med["exec_true"]
r2 = med["lsof"] / med["status"]
if mode == "light":
    print(f"status / exec true   = {r1:.2f}  (target <= 1.3: {'met' if r1 <= 1.3 else 'MISSED'})")
else:
    print(f"status / exec true   = {r1:.2f}  (the scan's own share of the time)")
print(f"lsof route / status  = {r2:.2f}  (target >= 5:   {'met' if r2 >= 5 else 'MISSED'})")
print(f"lsof route / exec true = {med['lsof'] / med['exec_true']:.2f}  (the most any remote scan could reach)")
first = "find" if mode == "light" else "status"
print(f"lookup on {where} ({nproc} processes): {first} {med['host_find'] * 1000:.1f}ms, "
      f"lsof {med['host_lsof'] * 1000:.1f}ms ({med['host_lsof'] / med['host_find']:.1f}x)")
if "host_walk" in med:
    print(f"  perl walk {med['host_walk'] * 1000:.1f}ms ({med['host_lsof'] / med['host_walk']:.1f}x)")
PY

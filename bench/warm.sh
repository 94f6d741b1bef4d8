#!/usr/bin/env bash
# Benchmarks the connection keeper (docs/keeper.md): a pod-wide command on a
# warm pod, side by side in one run with a cold tpurun (TPURUN_KEEP=0), pdsh
# and OpenSSH's own ControlMaster/ControlPersist in a parallel loop; then an
# unchanged re-stage on a warm pod against a warm exec on the same workers.
# Not a test (timings depend on the machine); run it by hand, as root, with
# nothing else using the simulator:
#
#   bench/warm.sh                 # 32 workers, 9 repetitions; the stage on workers 16-31, then on 31 alone
#   WORKERS=64 REPS=11 bench/warm.sh
#   bench/warm.sh big             # 256 workers: the keeper's RSS and sessions, warm exec
#
# Targets (issue 38): warm exec <= 0.05x pdsh; warm re-stage <= 2x warm exec.
# pdsh runs as it does out of the box: ssh's default key exchange (OpenSSH
# 9.2: sntrup761x25519, the costliest of its defaults). bench/fanout.py pins
# curve25519 for every tool instead, and its pdsh is about 3x faster.
# big: every command stays within one channel per kept session (sshd allows
# 10), and the keeper's RSS < 64 MiB.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
MODE=${1:-light}
case $MODE in
  light) WORKERS=${WORKERS:-32} REPS=${REPS:-9} ;;
  big) WORKERS=${WORKERS:-256} REPS=${REPS:-5} ;;
  *) echo "usage: bench/warm.sh [light|big]" >&2; exit 2 ;;
esac
STAGE_WORKERS=${STAGE_WORKERS:-16}
TPURUN_BIN=${TPURUN_BIN:-$root/build/tpurun}
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
for tool in pdsh ssh setpriv python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 2; }
done

bench_pod_up warm
home=$(getent passwd alice | cut -d: -f6)
runtime=$work/run-alice
install -d -m 700 -o alice "$runtime"
known=$work/known_hosts
install -m 644 -o alice /dev/null "$known"
hosts=$(python3 -c 'import json,sys; print(",".join(json.load(open(sys.argv[1]))["pods"]["sim"]["workers"]))' \
  "$FAKEPOD_CONFIG")
ssh_opts=(-i "$home/.ssh/id_ed25519" -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=accept-new
  -o "UserKnownHostsFile=$known" -o GSSAPIAuthentication=no -o LogLevel=ERROR)

as_alice() {  # KEEP ARGS...
  local keep=$1
  shift
  setpriv --reuid=alice --regid="$(id -g alice)" --init-groups -- env -i HOME="$home" USER=alice LOGNAME=alice \
    PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 XDG_RUNTIME_DIR="$runtime" XDG_STATE_HOME="$work/state" \
    TPURUN_KEEP="$keep" PDSH_SSH_ARGS="${ssh_opts[*]} -l%u %h" PDSH_RCMD_TYPE=ssh "$@" </dev/null
}
cleanup() {
  set +e
  as_alice 10m "$bin" agent stop >/dev/null 2>&1
  as_alice 10m ssh -O exit -o "ControlPath=$runtime/cm-%C" localhost >/dev/null 2>&1
  pkill -u alice -f "ControlPath=$runtime/cm" >/dev/null 2>&1
  bench_pod_restore
}
trap cleanup EXIT

run_cold() { as_alice 0 "$bin" --config "$FAKEPOD_CONFIG" exec -- true >/dev/null; }
run_warm() { as_alice 10m "$bin" --config "$FAKEPOD_CONFIG" exec -- true >/dev/null; }
run_pdsh() { as_alice 0 pdsh -R ssh -f 64 -w "$hosts" true >/dev/null; }
# OpenSSH's own masters, one per worker, in a parallel loop (what a script
# with ControlPersist does): the first round makes them.
run_mux() {
  as_alice 0 bash -c 'cp=$1; shift; hosts=$1; shift
    for h in ${hosts//,/ }; do ssh "$@" -o ControlMaster=auto -o "ControlPath=$cp" -o ControlPersist=10m "$h" true & done
    wait' bash "$runtime/cm-%C" "$hosts" "${ssh_opts[@]}"
}
results=$work/times.txt
: >"$results"

# Warm up: the keeper, ssh's masters, known_hosts.
run_pdsh
run_mux
as_alice 10m "$bin" agent start >&2
for _ in 1 2 3; do run_warm; done
keeper=$(as_alice 10m "$bin" agent status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')

if [[ $MODE == light ]]; then
  proj=$work/proj
  install -d -o alice "$proj"
  cp -r "$root/examples/trainer/." "$proj"
  chown -R alice: "$proj"
  sel=$((WORKERS - STAGE_WORKERS))-$((WORKERS - 1))  # the last ones: w8 of the e2e pod may carry a test's other uid
  run_stage_warm() { (cd "$proj" && as_alice 10m "$bin" --config "$FAKEPOD_CONFIG" stage --worker "$sel" --detach -- true >/dev/null); }
  run_stage_cold() { (cd "$proj" && as_alice 0 "$bin" --config "$FAKEPOD_CONFIG" stage --worker "$sel" --detach -- true >/dev/null); }
  # The same without the TPU scan (its sudo, sh and perl on every worker):
  # what the scan costs of a re-stage.
  run_stage_noscan() { (cd "$proj" && as_alice 10m "$bin" --config "$FAKEPOD_CONFIG" stage --worker "$sel" --detach --skip-preflight -- true >/dev/null); }
  run_exec16_warm() { as_alice 10m "$bin" --config "$FAKEPOD_CONFIG" exec --worker "$sel" -- true >/dev/null; }
  # The same on one worker: the simulator's cores are then not shared by 16
  # workers' scripts, so this is the latency a TPU VM, which runs its own
  # scripts on its own CPU, would see.
  one=$((WORKERS - 1))
  run_exec1_warm() { as_alice 10m "$bin" --config "$FAKEPOD_CONFIG" exec --worker "$one" -- true >/dev/null; }
  run_stage1_warm() { (cd "$proj" && as_alice 10m "$bin" --config "$FAKEPOD_CONFIG" stage --worker "$one" --detach -- true >/dev/null); }
  # A stage's watcher connects to its workers after the launch (its own
  # sessions, never the keeper's): wait until they are done, so that their
  # handshakes fall in no measurement.
  quiet() {
    local t0=$SECONDS
    while pgrep -u alice -f "_watcher /" >/dev/null; do
      ((SECONDS - t0 < 60)) || { echo "watchers still running after 60 s" >&2; return 0; }
      sleep 0.1
    done
  }
  run_stage_warm  # the first one stages the files; the rest are unchanged
  quiet
fi

for rep in $(seq "$REPS"); do
  echo "rep $rep/$REPS" >&2
  timed tpurun_warm run_warm
  timed tpurun_cold run_cold
  timed pdsh run_pdsh
  timed ssh_controlpersist run_mux
  if [[ $MODE == light ]]; then
    timed exec_warm_16 run_exec16_warm
    timed stage_warm_16 run_stage_warm
    quiet
    timed stage_cold_16 run_stage_cold
    quiet
    timed stage_warm_16_no_scan run_stage_noscan
    quiet
    timed exec_warm_1 run_exec1_warm
    timed stage_warm_1 run_stage1_warm
    quiet
  fi
done
rss=$(awk '/^VmHWM/ {print $2}' "/proc/$keeper/status")
read -r sessions peak < <(as_alice 10m "$bin" agent status --json |
  python3 -c 'import json,sys; s=json.load(sys.stdin)["sessions"]; print(len(s), max((x["peak_channels"] for x in s), default=0))')

python3 - "$results" "$WORKERS" "$MODE" "$rss" "$sessions" "$STAGE_WORKERS" "$root/bench" "$peak" <<'PY'
import sys
results, workers, mode, rss_kib, sessions, stage_workers, bench_dir, peak = sys.argv[1:9]
sys.path.insert(0, bench_dir)
from bench_times import load
times, med = load(results)
print(f"{workers} workers, {len(times['tpurun_warm'])} reps, medians:")
for label in ("tpurun_warm", "tpurun_cold", "pdsh", "ssh_controlpersist",
              "exec_warm_16", "stage_warm_16", "stage_cold_16", "stage_warm_16_no_scan",
              "exec_warm_1", "stage_warm_1"):
    if label in med:
        print(f"  {label:<20} {med[label]*1000:8.1f} ms   (min {min(times[label])*1000:.1f}, max {max(times[label])*1000:.1f})")
w = med["tpurun_warm"]
print(f"warm exec / pdsh:                {w / med['pdsh']:.3f}x  (target <= 0.05x)")
print(f"warm exec / cold exec:           {w / med['tpurun_cold']:.3f}x")
print(f"warm exec / ssh ControlPersist:  {w / med['ssh_controlpersist']:.3f}x")
if "stage_warm_16" in med:
    print(f"warm re-stage / warm exec ({stage_workers} workers): {med['stage_warm_16'] / med['exec_warm_16']:.2f}x  (target <= 2x)")
    print(f"warm re-stage / cold re-stage:   {med['stage_warm_16'] / med['stage_cold_16']:.2f}x")
    print(f"warm re-stage without the TPU scan (--skip-preflight) / warm exec: "
          f"{med['stage_warm_16_no_scan'] / med['exec_warm_16']:.2f}x")
    print(f"warm re-stage / warm exec (1 worker, its CPU not shared): "
          f"{med['stage_warm_1'] / med['exec_warm_1']:.2f}x")
print(f"keeper: peak RSS {int(rss_kib)/1024:.1f} MiB (target < 64 MiB), {sessions} kept sessions for {workers} workers,"
      f" at most {peak} channel(s) open at once on any of them (sshd's MaxSessions: 10)")
PY

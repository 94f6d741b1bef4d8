#!/usr/bin/env bash
# Benchmarks `tpurun up` on the pod simulator, through gcloud against the
# simulated Cloud TPU API (not a test: timings depend on the machine). Run by
# hand as root:
#
#   bench/up.sh                 # 3 repetitions, queued and plain
#   REPS=5 MODES=queued bench/up.sh
#
# For a 2-worker spot TPU VM, each rep runs `up` then `down --yes`, and prints
# what `up` reports on its "times:" line:
#   - create to READY: the cloud's part (queued resource to ACTIVE and the
#     node READY, or tpu-vm create), which tpurun only waits for;
#   - up's own cost: from READY to "pod ready" minus the setup script's time
#     (keys and host keys, the workers answering, doctor's checks);
#   - setup: the pod's setup script on every worker.
# Then (SECTIONS=preempt) preemption -> resumed run on a queued-resource VM:
# `up` makes it, `stage --recreate` runs a job, `fakepod preempt` (node
# PREEMPTED, queued resource SUSPENDED), until attempt 2's pid records; split
# as bench/gang.sh part 4 does (detection, API: delete --force, create,
# until READY, keys, setup, launch) from the run's state.json.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
WORKERS=${WORKERS:-8}
REPS=${REPS:-3}
MODES=${MODES:-queued,plain}
SECTIONS=${SECTIONS:-up,preempt}
TPURUN_BIN=${TPURUN_BIN:-$root/build/tpurun}
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
bench_pod_up up
install -d -o alice -g "$(id -gn alice)" "$work/proj" "$work/state"
install -m 644 -o alice "$root/examples/trainer/train.py" "$work/proj/train.py"  # something to stage
ZONE=us-central2-b

cleanup() {
  set +e
  tp --pod upq down --yes --force >/dev/null 2>&1
  tp --pod upp down --yes --force >/dev/null 2>&1
  bench_pod_restore
}
trap cleanup EXIT


cat >"$work/setup.sh" <<SH
#!/bin/bash
set -e
[ -n "\$(ls -A $FAKEPOD_NFS)" ] || sudo mount -t fakenfs fakenfs:/ $FAKEPOD_NFS
SH
pod() {  # NAME QUEUED
  printf '"%s": { "gcloud": { "name": "%s", "zone": "%s", "project": "sim-proj" }, "ssh": { "identity_file": "~/.ssh/id_ed25519", "connect_timeout_s": 5 }, "staging_root": "%s/staging", "logs_root": "%s/logs", "setup": "%s", "create": { "accelerator_type": "v4-16", "runtime_version": "tpu-ubuntu2204-base", "spot": true, "queued": %s } }' \
    "$1" "$1" "$ZONE" "$FAKEPOD_NFS" "$FAKEPOD_NFS" "$work/setup.sh" "$2"
}
CONFIG=$work/up.json
echo "{ \"pods\": { $(pod upq true), $(pod upp false) } }" >"$CONFIG"
chmod 644 "$work/setup.sh" "$work/up.json"

echo "up benchmark: 2-worker spot TPU VM, $REPS repetitions per mode"
[[ ,$SECTIONS, == *,up,* ]] || MODES=""
for mode in ${MODES//,/ }; do
  name=upq
  [[ $mode == plain ]] && name=upp
  rows=()
  for _ in $(seq "$REPS"); do
    start=$(date +%s.%N)
    err=$(tp --pod "$name" up --poll 500ms 2>&1 >/dev/null) || { echo "up failed: $err" >&2; exit 1; }
    end=$(date +%s.%N)
    rows+=("$(python3 - "$err" "$start" "$end" <<'PY'
import re, sys
m = re.search(r"create to READY ([\d.]+)s; then up's own steps ([\d.]+)s .* and doctor ([\d.]+)s; setup ([\d.]+)s", sys.argv[1])
ready, own, doctor, setup = map(float, m.groups())
print(f"{float(sys.argv[3]) - float(sys.argv[2]):.1f} {ready:.1f} {own + doctor:.1f} {setup:.1f}")
PY
)")
    tp --pod "$name" down --yes >/dev/null 2>&1
  done
  printf '%s\n' "${rows[@]}" | python3 -c '
import statistics, sys
mode = sys.argv[1]
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
med = [statistics.median(c) for c in zip(*rows)]
print("up (%s): %.1f s median end to end; create to READY %.1f s; up'"'"'s own cost %.1f s (keys, workers answering, doctor); setup %.1f s" % (mode, *med))
print("  each rep (total ready own setup):", "; ".join(" ".join("%.1f" % v for v in r) for r in rows))' "$mode"
done

[[ ,$SECTIONS, == *,preempt,* ]] || exit 0
tp --pod upq up --poll 500ms >/dev/null 2>&1 || { echo "up failed" >&2; exit 1; }
rows=()
for _ in $(seq "$REPS"); do
  out=$(tp --pod upq stage --detach --json --recreate --lost-after 3s -- sleep 600 2>/dev/null)
  dir=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["log_dir"])' "$out")
  for _ in $(seq 1200); do (( $(ls "$dir"/worker*.pid 2>/dev/null | wc -l) >= 2 )) && break; sleep 0.1; done
  t0=$(date +%s.%N)
  "$FAKEPOD" preempt upq --zone "$ZONE" >/dev/null
  for _ in $(seq 3000); do (( $(ls "$dir"/worker*.a2.pid 2>/dev/null | wc -l) >= 2 )) && break; sleep 0.1; done
  rows+=("$(python3 - "$dir" "$t0" <<'PY'
import json, os, sys
d, t0 = sys.argv[1], float(sys.argv[2])
resumed = max(os.stat(os.path.join(d, f)).st_mtime for f in os.listdir(d) if f.endswith(".a2.pid"))
t = json.load(open(os.path.join(d, "state.json")))["preemptions"][-1].get("times_s", {})
total = resumed - t0
detect = total - sum(t.get(k, 0) for k in ("api", "keys", "setup", "launch"))
print(f"{total:.1f} {detect:.1f} {t.get('api', 0):.1f} {t.get('keys', 0):.1f} {t.get('setup', 0):.1f} {t.get('launch', 0):.1f}")
PY
)")
  tp --pod upq kill --run "$(basename "$dir")" --grace 1s >/dev/null 2>&1 || true
done
printf '%s\n' "${rows[@]}" | python3 -c '
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
med = [statistics.median(c) for c in zip(*rows)]
print("preemption -> resumed run (--recreate through the queued resource, %d reps): %.1f s median" % (len(rows), med[0]))
print("  detection %.1f s, API %.1f s (delete --force, create, until READY), keys %.1f s, setup %.1f s, launch %.1f s" % tuple(med[1:]))'

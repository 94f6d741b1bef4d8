#!/usr/bin/env bash
# The peer row users have today, side by side with tpurun (not a test: timings
# depend on the machine). Run it by hand, as root, while nothing else uses the
# pod simulator; it needs the real Google Cloud CLI (`gcloud`):
#
#   bench/gcloud_ssh.sh                      # 4, 32 and 128 workers, 5 repetitions
#   SIZES="4 32" REPS=7 bench/gcloud_ssh.sh
#   TPURUN_BIN=/path/to/tpurun bench/gcloud_ssh.sh
#
# For each size it brings the simulator up with that many workers (the
# simulated Cloud TPU API behind real gcloud; the previous size comes back at
# exit) and, as alice, after one warm-up run of each (gcloud's first ssh adds
# alice's key to the node's metadata and records the host keys), interleaved,
# REPS times:
#   gcloud:        gcloud compute tpus tpu-vm ssh sim-tpu --worker=all --command true
#   gcloud_b8:     gcloud alpha compute tpus tpu-vm ssh ... --batch-size 8
#                  (--batch-size is alpha-only in gcloud 528)
#   tpurun:        tpurun exec -- true on a gcloud pod ({"gcloud": {...}}:
#                  tpurun runs `gcloud ... describe` itself)
#   tpurun_static: tpurun exec -- true on the same workers listed statically
#                  (no gcloud call: the floor)
# and prints the medians and the ratios tpurun / gcloud (issue 16's targets:
# <= 0.4 at 4 workers, <= 0.15 at 32).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
SIZES=${SIZES:-4 32 128}
REPS=${REPS:-5}
TPURUN_BIN=${TPURUN_BIN:-$root/build/tpurun}
command -v gcloud >/dev/null || { echo "gcloud_ssh.sh needs the Google Cloud CLI (gcloud)" >&2; exit 2; }
WORKERS=${SIZES%% *}
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
bench_pod_up gcloud
results=$work/times.txt
: >"$results"
trap 'rm -f /home/alice/.ssh/google_compute_engine /home/alice/.ssh/google_compute_engine.pub; bench_pod_restore' EXIT

home=$(getent passwd alice | cut -d: -f6)
as_alice() {
  setpriv --reuid=alice --regid="$(id -g alice)" --init-groups -- env -i HOME="$home" USER=alice LOGNAME=alice \
    PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 CLOUDSDK_CONFIG="$FAKEPOD_GCLOUD_CONFIGS/alice" "$@" </dev/null
}
gc_all() { as_alice gcloud compute tpus tpu-vm ssh sim-tpu --zone us-central2-b --worker=all --command true >/dev/null 2>&1; }
gc_b8() {
  as_alice gcloud alpha compute tpus tpu-vm ssh sim-tpu --zone us-central2-b --worker=all --batch-size 8 \
    --command true >/dev/null 2>&1
}
tp_gcloud() { as_alice "$bin" --config "$work/gcloud.json" exec -- true >/dev/null 2>&1; }
tp_static() { as_alice "$bin" --config "$work/static.json" exec -- true >/dev/null 2>&1; }

for n in $SIZES; do
  WORKERS=$n
  "$FAKEPOD" up "$n" >&2
  eval "$("$FAKEPOD" env)"
  # tpurun checks host keys where gcloud records them (HostKeyAlias entries in
  # ~/.ssh/google_compute_known_hosts), so one gcloud run comes first.
  rm -f "$home/.ssh/google_compute_known_hosts"
  gc_all || { echo "gcloud ssh failed at $n workers" >&2; exit 1; }
  python3 - "$work" "$FAKEPOD_NFS" "$FAKEPOD_CONFIG" <<'PY'
import json, sys
work, nfs, static = sys.argv[1:]
ssh = {"identity_file": "~/.ssh/google_compute_engine", "known_hosts": "~/.ssh/known_hosts",
       "host_key_policy": "accept-new", "connect_timeout_s": 10}
g = {"pods": {"g": {"gcloud": {"name": "sim-tpu", "zone": "us-central2-b", "project": "sim-proj"}, "ssh": ssh,
                    "staging_root": nfs + "/staging", "logs_root": nfs + "/logs"}}}
json.dump(g, open(work + "/gcloud.json", "w"), indent=1)
s = json.load(open(static))
s["pods"]["sim"]["ssh"]["identity_file"] = "~/.ssh/google_compute_engine"
json.dump(s, open(work + "/static.json", "w"), indent=1)
PY
  chmod 644 "$work/gcloud.json" "$work/static.json"
  gc_b8 || { echo "gcloud alpha ssh --batch-size failed at $n workers" >&2; exit 1; }
  # The pod came back with another size under the same name: to tpurun that is
  # a recreated VM, whose kept describe (up to 10 minutes) is out of date.
  rm -rf "$home/.cache/tpurun/describe"
  tp_gcloud || { echo "tpurun exec on the gcloud pod failed at $n workers" >&2; as_alice "$bin" --config "$work/gcloud.json" exec -- true; exit 1; }
  for cfg in gcloud static; do  # every run below must reach all n workers
    got=$(as_alice "$bin" --config "$work/$cfg.json" exec -- hostname 2>/dev/null | grep -c "fakepod-w-" || true)
    [[ $got == "$n" ]] || { echo "tpurun exec on the $cfg pod reached $got of $n workers" >&2; exit 1; }
  done
  tp_static || { echo "tpurun exec on the static pod failed at $n workers" >&2; exit 1; }
  for ((r = 1; r <= REPS; r++)); do
    timed "gcloud/$n" gc_all
    timed "gcloud_b8/$n" gc_b8
    timed "tpurun/$n" tp_gcloud
    timed "tpurun_static/$n" tp_static
    echo "$n workers: repetition $r/$REPS done" >&2
  done
done

python3 - "$results" "$SIZES" "$root/bench" <<'PY'
import statistics, sys
sys.path.insert(0, sys.argv[3])
from bench_times import load
t, _ = load(sys.argv[1])
print("%-8s %10s %12s %10s %14s %16s %16s" % ("workers", "gcloud", "gcloud -b 8", "tpurun", "tpurun static",
                                             "tpurun/gcloud", "tpurun/gcloud-b8"))
for n in sys.argv[2].split():
    m = {k: statistics.median(t["%s/%s" % (k, n)]) for k in ("gcloud", "gcloud_b8", "tpurun", "tpurun_static")}
    print("%-8s %9.2fs %11.2fs %9.2fs %13.2fs %15.2fx %15.2fx" % (n, m["gcloud"], m["gcloud_b8"], m["tpurun"],
          m["tpurun_static"], m["tpurun"] / m["gcloud"], m["tpurun"] / m["gcloud_b8"]))
print("(medians of %d; issue 16's targets: tpurun/gcloud <= 0.4 at 4 workers, <= 0.15 at 32)" % len(t["tpurun/" + sys.argv[2].split()[0]]))
PY

#!/usr/bin/env bash
# Benchmarks `tpurun stage` on a pod with no shared mount (issue 26): the
# simulator in FAKEPOD_NFS_MODE=none, every VM with only its own disk, as
# alice. Side by side in one run, interleaved, medians of REPS:
#
#   tpurun:   the whole `tpurun stage --detach -- true` (snapshot here, the
#             push to every worker, run record, launch)
#   rsync:    one `rsync -a` per worker, all at once, over ssh (SkyPilot's and
#             EasyLM's way): the copy alone
#   gcloud:   `gcloud compute tpus tpu-vm scp --recurse --worker=all` against
#             the simulated API (MaxText's and the seeds' way): the copy alone
#
# for a fresh tree (nothing on the workers, nothing here), the same tree
# unchanged, and one file changed; then the ratios tpurun / rsync and tpurun /
# gcloud, the bytes that left this host per worker, and tpurun's peak RSS.
# Not a test (timings depend on the machine); by hand, as root:
#
#   bench/noshare.sh                         # 2,000 files / 40 MB, 16 workers, 3 reps
#   WORKERS=32 FILES=10000 BYTES=200000000 REPS=1 bench/noshare.sh
#   GCLOUD=0 bench/noshare.sh                # without the gcloud scp anchor (slow)
#   ALICE_HOME=/var/tmp/h bench/noshare.sh   # alice's home here: a copy of hers with her ~/.ssh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
WORKERS=${WORKERS:-16}
FILES=${FILES:-2000}
BYTES=${BYTES:-40000000}
REPS=${REPS:-3}
GCLOUD=${GCLOUD:-1}
TPURUN_BIN=${TPURUN_BIN:-$root/build/tpurun}
export FAKEPOD_STATE=${FAKEPOD_STATE:-/var/lib/tpurun-fakepod-nsbench}
export FAKEPOD_NFS=${FAKEPOD_NFS:-/srv/tpurun-nsbench}
export FAKEPOD_NET=${FAKEPOD_NET:-127.0.11}
export FAKEPOD_NFS_MODE=none
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
for tool in rsync ssh setpriv; do command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 2; }; done
if [[ $GCLOUD == 1 ]] && ! command -v gcloud >/dev/null; then GCLOUD=0; fi

bench_pod_up noshare
# ALICE_HOME: alice's home on this host for the bench (default: her own). A
# copy with her ~/.ssh lets the bench run beside the no-shared-mount e2e
# tests, which use her real ~/.tpurun (the bench moves it aside).
home=${ALICE_HOME:-$(getent passwd alice | cut -d: -f6)}
trap 'remove_aside; chmod -R u+w "$home/.tpurun" "$work" 2>/dev/null; rm -rf "$home/.tpurun"; bench_pod_restore' EXIT
results=$work/results
: >"$results"
install -d -o alice -g "$(id -g alice)" "$work/alice"  # what alice's commands write (rss)
src=/var/tmp/tpurun-bench-src-$FILES-$BYTES-alice
bench_tree "$src" git alice

as_alice() {
  setpriv --reuid=alice --regid="$(id -g alice)" --init-groups -- env -i HOME="$home" USER=alice LOGNAME=alice \
    PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 CLOUDSDK_CONFIG="$FAKEPOD_GCLOUD_CONFIGS/alice" \
    XDG_CACHE_HOME="$work/cache" TPURUN_KEEP="${TPURUN_KEEP:-10m}" "$@" </dev/null
}
ips=()
for i in $(seq 0 $((WORKERS - 1))); do ips+=("$(sed -n "$((i + 1))p" <(tr ',' '\n' <"$FAKEPOD_STATE/hostnames"))"); done
ssh_opts="-i $home/.ssh/id_ed25519 -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=$home/.ssh/known_hosts -o BatchMode=yes"

# Nothing of tpurun's or rsync's on any worker, nothing here. Moved aside,
# and removed only at the end: ext4 (without a journal, as here) skips inodes
# freed in the last minutes when it allocates new ones, so a copy made just
# after a big removal pays for that removal (measured: 2x, whichever tool
# went first).
wipe_workers() {
  local aside
  aside=".bench-aside/$(date +%s%N)"
  for i in $(seq 0 $((WORKERS - 1))); do
    "$FAKEPOD" exec "$i" --user alice -- sh -c "mkdir -p ~/$aside && for d in .tpurun rsync-dest gcloud-dest; do [ ! -e ~/\$d ] || mv ~/\$d ~/$aside/; done" &
  done
  wait
  mkdir -p "$work/aside"
  [[ ! -e $home/.tpurun ]] || mv "$home/.tpurun" "$work/aside/$(date +%s%N)"
  [[ ! -e $work/cache ]] || mv "$work/cache" "$work/aside/cache-$(date +%s%N)"
  install -d -o alice -g "$(id -g alice)" "$work/cache"
}
# What wipe_workers moved aside, removed once the timing is over.
remove_aside() {
  for i in $(seq 0 $((WORKERS - 1))); do
    "$FAKEPOD" exec "$i" --user alice -- sh -c 'chmod -R u+w ~/.bench-aside 2>/dev/null; rm -rf ~/.bench-aside' &
  done
  wait
}
tp_stage() {
  (cd "$src" && as_alice /usr/bin/time -f '%M' -o "$work/alice/rss" "$bin" --config "$FAKEPOD_CONFIG" -v stage --detach -- true) \
    >/dev/null 2>"$work/stage.err" || { echo "stage failed: $(tail -5 "$work/stage.err")" >&2; exit 1; }
  echo "rss_kib $(cat "$work/alice/rss")" >>"$work/extra"  # with its children (git)
  echo "self_mib $(sed -n 's/.*peak memory: \([0-9.]*\) MiB.*/\1/p' "$work/stage.err")" >>"$work/extra"
  # What left this host: the content the workers lacked (nothing when every worker had it).
  if grep -q 'every worker had snapshot' "$work/stage.err"; then
    echo "sent 0 B" >>"$work/extra"
  else
    sed -n 's/.*sent [0-9]* files\? (\([^)]*\)).*/sent \1/p' "$work/stage.err" >>"$work/extra"
  fi
}
rsync_all() {
  for ip in "${ips[@]}"; do
    as_alice rsync -a -e "ssh $ssh_opts" "$src/" "alice@$ip:rsync-dest/" &
  done
  wait
}
gcloud_scp() {
  as_alice gcloud compute tpus tpu-vm scp --recurse "$src" sim-tpu:gcloud-dest --worker=all --zone us-central2-b \
    >/dev/null 2>&1
}
change_one() {
  local f
  f=$(as_alice git -C "$src" ls-files | sed -n 1p)  # (sed reads it all: no SIGPIPE)
  as_alice sh -c "echo \"# change \$(date +%s%N)\" >>'$src/$f'"
}

# Each timed step starts with the disk's queue empty: without it a step pays
# for the previous one's writeback (on a machine whose disk is slower than
# its CPUs, measured: 16 writers blocked, 70-83% iowait, in whichever fresh
# copy came second), and the fresh ratios follow the order, not the tools.
settled() { sync; timed "$@"; }

# Warm-up: host keys, gcloud's keys, the page cache.
wipe_workers
rsync_all
[[ $GCLOUD == 1 ]] && { gcloud_scp || GCLOUD=0; }
: >"$work/extra"
for rep in $(seq "$REPS"); do
  echo "rep $rep of $REPS ..." >&2
  wipe_workers
  if ((rep % 2)); then  # who goes first after the wipe alternates
    settled tpurun/fresh tp_stage
    settled rsync/fresh rsync_all
  else
    settled rsync/fresh rsync_all
    settled tpurun/fresh tp_stage
  fi
  settled tpurun/unchanged tp_stage
  settled rsync/unchanged rsync_all
  change_one
  settled tpurun/changed tp_stage
  settled rsync/changed rsync_all
  if [[ $GCLOUD == 1 ]]; then settled gcloud/fresh gcloud_scp; fi
done
as_alice git -C "$src" checkout -q -- . 2>/dev/null || true
remove_aside

/usr/bin/python3 - "$results" "$work/extra" "$WORKERS" "$FILES" "$BYTES" "$root/bench" <<'PY'
import sys
sys.path.insert(0, sys.argv[6])
from bench_times import load
times, med = load(sys.argv[1])
workers, files, size = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
print(f"no shared mount: {workers} workers, {files} files / {size / 1e6:.0f} MB (medians, s)")
targets = {"fresh": 0.8, "unchanged": 0.5, "changed": 0.6}
for case in ("fresh", "unchanged", "changed"):
    t, r = med[f"tpurun/{case}"], med[f"rsync/{case}"]
    print(f"  {case:10} tpurun {t:6.2f}  parallel rsync {r:6.2f}  ratio {t / r:.2f}x (target <= {targets[case]})"
          f"  [tpurun {' '.join(f'{x:.2f}' for x in times[f'tpurun/{case}'])}]")
if "gcloud/fresh" in med:
    g = med["gcloud/fresh"]
    print(f"  fresh      tpurun {med['tpurun/fresh']:6.2f}  gcloud scp --worker=all {g:6.2f}  "
          f"ratio {med['tpurun/fresh'] / g:.2f}x (target <= 0.25)")
extra = [l.split(None, 1) for l in open(sys.argv[2]) if l.strip()]
rss = [int(v) for k, v in extra if k == "rss_kib"]
own = [float(v) for k, v in extra if k == "self_mib" and v.strip()]
sent = [v.strip() for k, v in extra if k == "sent"]
print(f"  tpurun client peak RSS: {max(own):.0f} MiB (target <= 64); with its child processes (git): "
      f"{max(rss) / 1024:.0f} MiB")
reps = [sent[i:i + 3] for i in range(0, len(sent), 3)]
print("  bytes sent by tpurun, all workers together, per rep (fresh / unchanged / changed): "
      + "; ".join(" / ".join(r) for r in reps) + f"  (fresh: the tree, about {size / 1e6:.0f} MB, to each of {workers})")
PY

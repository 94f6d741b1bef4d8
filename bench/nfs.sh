#!/usr/bin/env bash
# Benchmarks tpurun on the simulator's NFS-like mount: a pod in NFS mode
# (FAKEPOD_NFS_MODE=fuse: the dev VM and every worker mount their own sim/nfs
# client of one export, with the default knobs: acregmin 3 s, acdirmin 30 s,
# writeback 30 s, root_squash; docs/simulator-nfs.md), the built tpurun binary,
# run as alice. Side by side with its peers on the same mount, as ratios from
# one run. Not a test (timings depend on the machine); run it by hand, as root:
#
#   bench/nfs.sh                     # 10k files / 200 MB, 4 workers, 3 repetitions, 20 log lines
#   FILES=2000 BYTES=40000000 REPS=1 LINES=10 bench/nfs.sh
#   WORKERS=8 OPS=0 bench/nfs.sh     # OPS=0: no per-operation latencies
#
# It prints, in order:
#   1. per-operation latency (median, microseconds) on the dev VM's client
#      mount and on a plain local directory: stat, open+close, a 4 KiB write,
#      fsync, create+close;
#   then REPS times, interleaved so that load from elsewhere hits all alike
#   (this machine is shared), and as medians:
#   2. a fresh `tpurun stage --detach -- true` (empty object store, no stat
#      cache) against `cp -a` of the same tree onto the mount (target <= 1.0);
#      the stage's time is the whole command: preflight, snapshot, run record,
#      launch on every worker; the links of its new files into the object
#      store come after the launch (a detached `tpurun _adopt`), timed apart;
#   3. an unchanged re-stage (the same command again) against
#      `rsync -a --link-dest=<the cp -a copy>` (target <= 0.3);
#      with each, the dev VM client's requests per file (roughly NFS round trips);
#   4. `tpurun logs RUN -f` line latency: a run whose jobs print a line now and
#      then on one worker and compute quietly in between (bench/nfs_lines.py),
#      followed from the dev VM with --raw and collapsed at once; latency is
#      from the job's write to the line on tpurun's output (target: median <= 2 s).
#
# It runs its own pod beside the e2e ones (FAKEPOD_STATE, FAKEPOD_NFS and
# FAKEPOD_NET below), refuses to start if that pod is up, starts it with an
# empty export and brings it down at exit: no FUSE mount is left behind.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
WORKERS=${WORKERS:-4}
FILES=${FILES:-10000}
BYTES=${BYTES:-200000000}
OPS=${OPS:-1000}
REPS=${REPS:-3}
LINES=${LINES:-20}
EVERY=${EVERY:-3}
WORK=${WORK:-/var/tmp/tpurun-bench-nfs}
TPURUN_BIN=${TPURUN_BIN:-$root/build/tpurun}
export FAKEPOD_STATE=${FAKEPOD_STATE:-/var/lib/tpurun-fakepod-nfsbench}
export FAKEPOD_NFS=${FAKEPOD_NFS:-/srv/tpurun-nfsbench}
export FAKEPOD_NET=${FAKEPOD_NET:-127.0.8}
export FAKEPOD_NFS_MODE=fuse
PY=/usr/bin/python3
USER_=alice

die() { echo "bench/nfs.sh: $*" >&2; exit 2; }
[[ $(id -u) == 0 ]] || die "run as root (it drives scripts/fakepod)"
[[ -e /dev/fuse ]] || die "no /dev/fuse"
$PY -c 'import pyfuse3' 2>/dev/null || die "$PY lacks pyfuse3 (scripts/install-deps)"
for tool in cp rsync git setpriv; do
  command -v "$tool" >/dev/null || die "missing $tool"
done
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
if ! "$FAKEPOD" status 2>/dev/null | grep -q '^pod down'; then
  die "the bench's pod ($FAKEPOD_STATE) is up: another bench/nfs.sh? (FAKEPOD_STATE=$FAKEPOD_STATE scripts/fakepod down)"
fi

# A fresh export: no object store, no snapshots, no runs of an earlier bench.
rm -rf "$FAKEPOD_STATE/nfs-server"
bench_pod_up nfs
cleanup() {
  set +e
  if [[ -n ${lines_run:-} ]]; then tp kill --run "$lines_run" --grace 1s >/dev/null 2>&1; fi
  bench_pod_restore
  rm -rf "$FAKEPOD_STATE/nfs-server"
}
trap cleanup EXIT
mnt=$FAKEPOD_NFS
export_dir=$FAKEPOD_NFS_EXPORT
install -d -o "$USER_" -g "$(id -g "$USER_")" "$work/lines" "$work/cache"
tp() { BENCH_ENV="XDG_CACHE_HOME=$work/cache" bench_as "$USER_" "$bin" --config "$FAKEPOD_CONFIG" "$@" </dev/null; }

mkdir -p "$WORK"
chmod 755 "$WORK"
src=$WORK/src-git-$FILES-$BYTES-$USER_
bench_tree "$src" git "$USER_"

# requests FILE: what the dev VM's client has served so far, by kind (JSON), into FILE.
stats=$FAKEPOD_STATE/nfs-host.stats.json
requests() {
  rm -f "$stats"
  kill -USR1 "$(cat "$FAKEPOD_STATE/nfs-host.pid")"
  for _ in $(seq 50); do [[ -e $stats ]] && break; sleep 0.1; done
  cp "$stats" "$1"
}

if ((OPS > 0)); then
  echo "1. per-operation latency, $OPS of each, as $USER_ (median us; the mount / a local dir)"
  bench_as "$USER_" mkdir "$mnt/staging/$USER_-ops" # (root is nobody on the mount)
  install -d -o "$USER_" "$work/ops-local"
  bench_as "$USER_" $PY - "$mnt/staging/$USER_-ops" "$work/ops-local" "$OPS" <<'PY'
import os, statistics, sys, time
mount_dir, local_dir, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
block = b"x" * 4096

def timed(fn, count):
    out = []
    for i in range(count):
        t = time.perf_counter_ns()
        fn(i)
        out.append((time.perf_counter_ns() - t) / 1000)
    return statistics.median(out)

def measure(d):
    path = os.path.join(d, "f")
    with open(path, "wb") as f:
        f.write(block)
    r = {}
    r["stat"] = timed(lambda i: os.stat(path), n)
    r["open+close"] = timed(lambda i: os.close(os.open(path, os.O_RDONLY)), n)
    fd = os.open(os.path.join(d, "log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    r["write 4 KiB"] = timed(lambda i: os.write(fd, block), n)
    r["fsync"] = timed(lambda i: os.fsync(fd), min(n, 100))
    os.close(fd)
    r["create+close"] = timed(
        lambda i: os.close(os.open(os.path.join(d, f"c{i}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)), n)
    return r

m, l = measure(mount_dir), measure(local_dir)
for k in m:
    print(f"  {k:14} {m[k]:9.1f} {l[k]:9.1f}   x{m[k] / l[k]:.1f}")
PY
fi

# wait_run LOG_DIR: until the run's watcher is gone (its job, `true`, ends at
# once), so that it polls nothing during the next measurement. Read as root on
# the export: on the mount root is nobody, and alice's logs dir is private.
wait_run() {
  local state=$export_dir${1#"$mnt"}/state.json pid=""
  for _ in $(seq 600); do
    pid=$($PY -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["watcher"]["pid"] if s["verdict"] != "running" else "")' \
      "$state" 2>/dev/null || true)
    [[ -n $pid ]] && break
    sleep 0.1
  done
  [[ -n $pid ]] || die "the run in $1 did not end (see $state)"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}
# Each repetition stages into its own staging root (a copy of the pod's
# config with staging_root = $mnt/staging/repN, and its own stat cache), so
# every fresh stage meets an empty object store and nothing is deleted while
# measuring (see bench/stage.sh on ext4 and freed inodes).
rep_config() { # N: writes $work/repN.json
  $PY - "$FAKEPOD_CONFIG" "$mnt/staging/rep$1" "$work/rep$1.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
for pod in config["pods"].values():
    pod["staging_root"] = sys.argv[2]
json.dump(config, open(sys.argv[3], "w"), indent=2)
PY
  chmod 644 "$work/rep$1.json"
  bench_as "$USER_" mkdir "$mnt/staging/rep$1"
  install -d -o "$USER_" -g "$(id -g "$USER_")" "$work/cache$1"
}
stage_true() { # prints the run's log dir
  (cd "$src" && BENCH_ENV="XDG_CACHE_HOME=$work/cache$rep" \
    bench_as "$USER_" "$bin" --config "$work/rep$rep.json" stage --detach --json -- true </dev/null) \
    >"$work/stage.json" 2>"$work/stage.err" || die "tpurun stage failed: $(head -5 "$work/stage.err")"
  $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["log_dir"])' "$work/stage.json"
}
cp_fresh() { bench_as "$USER_" cp -a "$src" "$mnt/staging/rep$rep-cp"; }
ours_fresh() { stage_dir=$(stage_true); }
# On NFS, stage links its new files into the object store after the launch
# (a detached `tpurun _adopt`): the bench waits for it before timing the next
# tool, so it competes with nothing, and reports how long it took.
wait_adopted() {
  local i log=$work/cache$rep/tpurun/adopt/adopt.log
  for i in $(seq 6000); do
    if ! compgen -G "$work/cache$rep/tpurun/adopt/*.list" >/dev/null; then
      [[ ! -s $log ]] || die "tpurun _adopt: $(cat "$log")"
      return 0
    fi
    sleep 0.1
  done
  die "tpurun _adopt did not finish in 600 s (see $work/cache$rep/tpurun/adopt/adopt.log)"
}
rsync_unchanged() { bench_as "$USER_" rsync -a --link-dest="$mnt/staging/rep$rep-cp" "$src/" "$mnt/staging/rep$rep-rsync/"; }
ours_unchanged() { stage_dir=$(stage_true); }
results=$work/times.txt
: >"$results"
measure() { # LABEL: runs function LABEL, timed, with the requests it cost
  sync
  requests "$work/$1.$rep.before.json"
  timed "$1" "$1"
  [[ $1 == ours_fresh ]] && timed ours_adopt wait_adopted
  sleep 1 # the kernel's last releases arrive after the tool exits
  requests "$work/$1.$rep.after.json"
  if [[ $1 == ours_* ]]; then
    cp "$work/stage.err" "$work/$1.err"
    wait_run "$stage_dir"
  fi
}

echo "2-3. staging $FILES files / $BYTES bytes onto the mount, as $USER_, $WORKERS workers, $REPS repetitions"
for rep in $(seq "$REPS"); do
  rep_config "$rep"
  for label in cp_fresh ours_fresh rsync_unchanged ours_unchanged; do measure "$label"; done
done
grep -h 'staged\|unchanged' "$work/ours_fresh.err" "$work/ours_unchanged.err" | sed 's/^/  /'
$PY - "$results" "$work" "$FILES" "$REPS" "$root/bench" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[5])
from bench_times import load
times, med = load(sys.argv[1])
work, files, reps = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
print("  median wall s [each repetition], and the dev VM client's requests per file in the last one "
      "(each roughly an NFS round trip; by kind, the larger ones):")
for k in ["cp_fresh", "ours_fresh", "rsync_unchanged", "ours_unchanged"]:
    before = json.load(open(f"{work}/{k}.{reps}.before.json"))
    after = json.load(open(f"{work}/{k}.{reps}.after.json"))
    diff = {op: after.get(op, 0) - before.get(op, 0) for op in after}
    total = sum(diff.values())
    kinds = " ".join(f"{op} {n / files:.2f}" for op, n in sorted(diff.items(), key=lambda x: -x[1])
                     if n / files >= 0.05)
    runs = " ".join(f"{t:.2f}" for t in times[k])
    print(f"  {k:16} {med[k]:7.2f} s [{runs}]  {total / files:6.2f} req/file  ({kinds})")
adopt = " ".join(f"{t:.2f}" for t in times["ours_adopt"])
print(f"  (ours_fresh's requests include linking its files into the object store, which a detached\n"
      f"   tpurun _adopt does after the launch: done {med['ours_adopt']:.2f} s after stage returned [{adopt}])")
fresh = med["ours_fresh"] / med["cp_fresh"]
unchanged = med["ours_unchanged"] / med["rsync_unchanged"]
def each(a, b):
    return " ".join(f"{x / y:.2f}" for x, y in zip(times[a], times[b]))
print(f"fresh tpurun stage / cp -a:                 {fresh:.3f} [{each('ours_fresh', 'cp_fresh')}]  "
      f"(target <= 1.0) {'ok' if fresh <= 1.0 else 'MISSED'}")
print(f"unchanged re-stage / rsync -a --link-dest: {unchanged:.3f} [{each('ours_unchanged', 'rsync_unchanged')}]  "
      f"(target <= 0.3) {'ok' if unchanged <= 0.3 else 'MISSED'}")
PY

echo "4. logs -f line latency: $LINES lines, one every ~$EVERY s from one of $WORKERS workers, quiet in between"
install -m 644 -o "$USER_" "$root/bench/nfs_lines.py" "$work/lines/nfs_lines.py"
out=$( (cd "$work/lines" && tp stage --detach --json -- python3 nfs_lines.py job "$LINES" "$EVERY" 5) ) \
  || die "tpurun stage of the line job failed"
lines_run=$($PY -c 'import json,sys; print(json.loads(sys.argv[1])["run_id"])' "$out")
bench_as "$USER_" python3 "$root/bench/nfs_lines.py" measure "$LINES" $((LINES * EVERY * 2 + 60)) -- \
  "$bin" --config "$FAKEPOD_CONFIG" logs "$lines_run" -f

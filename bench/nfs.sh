#!/usr/bin/env bash
# Benchmarks tpurun's staging on the simulator's NFS-like mount (sim/nfs, one
# client mount with the default knobs: acregmin 3 s, acdirmin 30 s, writeback
# 30 s, root squash), side by side with its peers on the same mount, as ratios
# from one run. Not a test (timings depend on the machine); run it by hand, as
# root:
#
#   bench/nfs.sh                     # 10k files / 200 MB, as user alice
#   FILES=2000 BYTES=40000000 bench/nfs.sh
#   BENCH_USER=bob OPS=2000 bench/nfs.sh
#
# It prints, in order:
#   1. per-operation latency (median, microseconds) on the mount and on the
#      plain backing directory: stat, open+close, a 4 KiB write, create+close;
#   2. a fresh snapshot (empty object store, no stat cache) against cp -a of
#      the same tree onto the mount (issue 17's target: <= 1.0);
#   3. an unchanged re-stage against rsync -a --link-dest=<previous copy>
#      (target: <= 0.3).
#
# The snapshot is tpurun's own staging code (create_snapshot, the step `tpurun
# stage` runs before it launches anything) through build/bench/tpurun-stage-bench,
# as in bench/stage.sh, so no pod is needed and a running simulator is left
# alone. Everything runs as BENCH_USER, not root: under root_squash root is
# "nobody" on the mount (see docs/simulator-nfs.md).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/var/tmp/tpurun-bench-nfs}
FILES=${FILES:-10000}
BYTES=${BYTES:-200000000}
OPS=${OPS:-1000}
USER_=${BENCH_USER:-alice}
BIN=${TPURUN_STAGE_BENCH:-$root/build/bench/tpurun-stage-bench}
PY=/usr/bin/python3

die() { echo "bench/nfs.sh: $*" >&2; exit 2; }
[[ $(id -u) == 0 ]] || die "run as root (it mounts the NFS-like client)"
[[ -e /dev/fuse ]] || die "no /dev/fuse"
[[ -x $BIN ]] || die "build it first: TARGETS=tpurun-stage-bench scripts/build"
id "$USER_" >/dev/null 2>&1 || die "no user $USER_ (scripts/fakepod up creates alice; or set BENCH_USER)"
$PY -c 'import pyfuse3' 2>/dev/null || die "$PY lacks pyfuse3 (scripts/install-deps)"
for tool in cp rsync git setpriv /usr/bin/time; do
  command -v "$tool" >/dev/null || die "missing $tool"
done

uid=$(id -u "$USER_")
gid=$(id -g "$USER_")
home=$(getent passwd "$USER_" | cut -d: -f6)
as_user() {
  setpriv --reuid="$uid" --regid="$gid" --init-groups -- env -i HOME="$home" USER="$USER_" LOGNAME="$USER_" \
    PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 "$@"
}

mkdir -p "$WORK"
chmod 755 "$WORK"
src=$WORK/src-$FILES-$BYTES-$USER_
if [[ ! -d $src ]]; then
  echo "generating $src ..." >&2
  install -d -o "$uid" -g "$gid" "$src.partial"
  as_user $PY "$root/bench/gen_tree.py" "$src.partial" --files "$FILES" --bytes "$BYTES"
  # The repository lives beside the tree, as in bench/stage.sh: cp and rsync
  # copy the files we stage, not git's object database too.
  install -d -o "$uid" -g "$gid" "$src.git"
  as_user git init -q --separate-git-dir="$src.git" "$src.partial"
  as_user git -C "$src.partial" add -A
  as_user git -C "$src.partial" -c user.name=bench -c user.email=bench@example.com commit -qm tree
  echo "gitdir: $src.git" >"$src.partial/.git"
  chown "$uid:$gid" "$src.partial/.git"
  mv "$src.partial" "$src"
  sleep 2 # let the files age past the stat cache's racy window
fi

stamp=$(date +%Y%m%d-%H%M%S)
export_dir=$WORK/export-$stamp
mnt=$WORK/mnt-$stamp
out=$WORK/out-$stamp
mkdir -p "$export_dir" "$mnt" "$out"
chmod 1777 "$export_dir" # the seeds' share root
install -d -o "$uid" -g "$gid" "$out/statcache" "$out/u"
results=$out/times.txt
: >"$results"

cleanup() {
  set +e
  umount "$mnt" 2>/dev/null || umount -l "$mnt"
  rmdir "$mnt"
  if [[ -z ${KEEP:-} ]]; then rm -rf "$export_dir"; fi
}
trap cleanup EXIT
(cd "$root" && $PY -m sim.nfs.mount --export "$export_dir" --mountpoint "$mnt" --log "$out/mount.log" \
  --stats "$out/stats.json")
daemon=$(pgrep -f -- "--mountpoint $mnt --log" | head -1)

# requests FILE: the requests the client has served so far, by kind (JSON), into FILE.
requests() {
  rm -f "$out/stats.json"
  kill -USR1 "$daemon"
  for _ in $(seq 50); do [[ -e $out/stats.json ]] && break; sleep 0.1; done
  cp "$out/stats.json" "$1"
}

echo "1. per-operation latency, $OPS of each, as $USER_ (median us; the mount / the backing dir)" >&2
as_user mkdir "$mnt/ops" "$export_dir/ops-local" # (root is nobody on the mount)
as_user $PY - "$mnt/ops" "$export_dir/ops-local" "$OPS" <<'PY'
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

timed() { # LABEL COMMAND...: appends "LABEL wall_seconds" to $results, and counts its requests
  local label=$1
  shift
  sync
  requests "$out/$label.before.json"
  if ! as_user /usr/bin/time -f "%e" -o "$out/u/time.txt" "$@" >"$out/last.log" 2>"$out/$label.err"; then
    echo "bench/nfs.sh: $label failed ($*); the first errors ($out/$label.err):" >&2
    head -5 "$out/$label.err" >&2
    exit 1
  fi
  echo "$label $(cat "$out/u/time.txt")" >>"$results"
  sleep 1 # the kernel's last releases arrive after the tool exits
  requests "$out/$label.after.json"
}

echo "2-3. staging $FILES files / $BYTES bytes onto the mount, as $USER_" >&2
as_user mkdir "$mnt/runs"
# staging_root is the mount's own dir, root-owned and sticky, as on the seeds' share.
timed cp_fresh cp -a "$src" "$mnt/runs/cp"
timed rsync_fresh rsync -a "$src/" "$mnt/runs/rsync/"
timed ours_fresh "$BIN" "$src" "$mnt" "$USER_" "$out/statcache" 0
cp "$out/last.log" "$out/ours_fresh.json"
timed rsync_unchanged rsync -a --link-dest="$mnt/runs/rsync" "$src/" "$mnt/runs/rsync-again/"
timed ours_unchanged "$BIN" "$src" "$mnt" "$USER_" "$out/statcache" 0
cp "$out/last.log" "$out/ours_unchanged.json"

echo "last fresh snapshot:     $(cat "$out/ours_fresh.json")"
echo "last unchanged re-stage: $(cat "$out/ours_unchanged.json")"
$PY - "$results" "$out" "$FILES" <<'PY'
import json, sys
t = dict((label, float(s)) for label, s in (line.split() for line in open(sys.argv[1])))
out, files = sys.argv[2], int(sys.argv[3])
labels = ["cp_fresh", "rsync_fresh", "ours_fresh", "rsync_unchanged", "ours_unchanged"]
print("one run on the NFS-like mount: wall seconds, and the client's requests per file "
      "(each a round trip to an NFS server, roughly; by kind, the larger ones):")
for k in labels:
    before = json.load(open(f"{out}/{k}.before.json"))
    after = json.load(open(f"{out}/{k}.after.json"))
    diff = {op: after.get(op, 0) - before.get(op, 0) for op in after}
    total = sum(diff.values())
    kinds = " ".join(f"{op} {n / files:.2f}" for op, n in sorted(diff.items(), key=lambda x: -x[1])
                     if n / files >= 0.05)
    print(f"  {k:16} {t[k]:7.2f} s  {total / files:5.2f} req/file  ({kinds})")
fresh = t["ours_fresh"] / t["cp_fresh"]
unchanged = t["ours_unchanged"] / t["rsync_unchanged"]
print(f"fresh snapshot / cp -a:                 {fresh:.2f}  (target <= 1.0) {'ok' if fresh <= 1.0 else 'MISSED'}")
print(f"unchanged re-stage / rsync --link-dest: {unchanged:.2f}  (target <= 0.3) {'ok' if unchanged <= 0.3 else 'MISSED'}")
PY
echo "outputs in $out (the export is removed unless KEEP=1)" >&2

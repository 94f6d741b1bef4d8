#!/usr/bin/env bash
# Benchmarks snapshot staging against the copies run_staging.sh-style scripts
# make. Not a test (timings depend on the machine); run it by hand:
#
#   bench/stage.sh                 # git work tree (the usual case)
#   MODE=plain bench/stage.sh      # a directory outside git
#   REPS=7 THREADS=1 bench/stage.sh
#   bench/stage.sh --clean         # delete the outputs of earlier runs
#
# It generates a deterministic tree of 10k files / 200 MB under $WORK (once),
# then, REPS times and interleaved so that load from elsewhere hits all of
# them alike: cp -a, rsync -a, our fresh snapshot (empty object store, no stat
# cache), rsync -a --link-dest=<previous copy> (nothing changed), and our
# re-stage of the unchanged tree. It prints the medians and the two targets:
#   fresh snapshot / cp -a                 <= 1.1
#   unchanged re-stage / rsync --link-dest <= 0.3
#
# Nothing is deleted while measuring: ext4 skips inodes freed in the last few
# minutes when it allocates new ones (recently_deleted()), so an rm -rf of the
# previous repetition's 50k files made every later copy several times slower,
# whatever tool made it. Each run writes to its own out-<time> dir instead;
# --clean removes them (then give the disk five minutes before measuring).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/var/tmp/tpurun-bench}
MODE=${MODE:-git}
REPS=${REPS:-5}
THREADS=${THREADS:-0}
FILES=${FILES:-10000}
BYTES=${BYTES:-200000000}
BIN=${TPURUN_STAGE_BENCH:-$root/build/bench/tpurun-stage-bench}

if [[ ${1:-} == --clean ]]; then
  rm -rf "$WORK"/out-*
  echo "removed the outputs of earlier runs; wait ~5 minutes before the next run" >&2
  exit 0
fi
[[ -x $BIN ]] || { echo "build it first: ninja -C build tpurun-stage-bench" >&2; exit 2; }
for tool in cp rsync python3 git /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 2; }
done

# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
src=$WORK/src-$MODE-$FILES-$BYTES
mkdir -p "$WORK"
bench_tree "$src" "$MODE"

out=$WORK/out-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
results=$out/times.txt
: >"$results"

# timed LABEL COMMAND...: appends "LABEL wall_seconds cpu_seconds" to
# $results (cpu = user + system, children included: rsync's helpers, git).
timed() {
  local label=$1
  shift
  sync
  /usr/bin/time -f "%e %U %S" -o "$out/time.txt" "$@" >"$out/last.log"
  awk -v label="$label" '{printf "%s %s %.2f\n", label, $1, $2 + $3}' "$out/time.txt" >>"$results"
}

for rep in $(seq 1 "$REPS"); do
  echo "repetition $rep/$REPS" >&2
  run=$out/$rep
  mkdir -p "$run/stage"
  timed cp_fresh cp -a "$src" "$run/cp"
  timed rsync_fresh rsync -a "$src/" "$run/rsync/"
  timed ours_fresh "$BIN" "$src" "$run/stage" bench "$run/statcache" "$THREADS"
  cp "$out/last.log" "$out/ours_fresh.json"
  timed rsync_unchanged rsync -a --link-dest="$run/rsync" "$src/" "$run/rsync-again/"
  timed ours_unchanged "$BIN" "$src" "$run/stage" bench "$run/statcache" "$THREADS"
  cp "$out/last.log" "$out/ours_unchanged.json"
done
echo "outputs kept in $out (bench/stage.sh --clean removes them)" >&2

echo "last fresh snapshot:     $(cat "$out/ours_fresh.json")"
echo "last unchanged re-stage: $(cat "$out/ours_unchanged.json")"
python3 - "$results" "$MODE" "$REPS" <<'PY'
import collections, statistics, sys
times = collections.defaultdict(list)
cpu = collections.defaultdict(list)
for line in open(sys.argv[1]):
    label, wall, used = line.split()
    times[label].append(float(wall))
    cpu[label].append(float(used))
med = {k: statistics.median(v) for k, v in times.items()}
print(f"mode={sys.argv[2]} repetitions={sys.argv[3]}: median wall s, median cpu s (user+sys), [all wall times]")
for label in ["cp_fresh", "rsync_fresh", "ours_fresh", "rsync_unchanged", "ours_unchanged"]:
    runs = " ".join(f"{t:.2f}" for t in times[label])
    print(f"  {label:16} {med[label]:6.2f}  {statistics.median(cpu[label]):6.2f}   [{runs}]")
fresh = med["ours_fresh"] / med["cp_fresh"]
unchanged = med["ours_unchanged"] / med["rsync_unchanged"]
print(f"fresh snapshot / cp -a:                 {fresh:.2f}  (target <= 1.1) {'ok' if fresh <= 1.1 else 'MISSED'}")
print(f"unchanged re-stage / rsync --link-dest: {unchanged:.2f}  (target <= 0.3) {'ok' if unchanged <= 0.3 else 'MISSED'}")
PY

#!/usr/bin/env bash
# Benchmarks snapshot staging against the copies run_staging.sh-style scripts
# make. Not a test (timings depend on the machine); run it by hand:
#
#   bench/stage.sh                 # git work tree (the usual case)
#   MODE=plain bench/stage.sh      # a directory outside git
#   REPS=7 THREADS=1 bench/stage.sh
#
# It generates a deterministic tree of 10k files / 200 MB under $WORK (once),
# then, REPS times and interleaved so that load from elsewhere hits all of
# them alike: cp -a, rsync -a, our fresh snapshot (empty object store, no stat
# cache), rsync -a --link-dest=<previous copy> (nothing changed), and our
# re-stage of the unchanged tree. It prints the medians and the two targets:
#   fresh snapshot / cp -a                 <= 1.1
#   unchanged re-stage / rsync --link-dest <= 0.3
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/var/tmp/tpurun-bench}
MODE=${MODE:-git}
REPS=${REPS:-5}
THREADS=${THREADS:-0}
FILES=${FILES:-10000}
BYTES=${BYTES:-200000000}
BIN=${TPURUN_STAGE_BENCH:-$root/build/bench/tpurun-stage-bench}

[[ -x $BIN ]] || { echo "build it first: ninja -C build tpurun-stage-bench" >&2; exit 2; }
for tool in cp rsync python3 git; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 2; }
done

src=$WORK/src-$MODE-$FILES-$BYTES
if [[ ! -d $src ]]; then
  echo "generating $src ..." >&2
  python3 "$root/bench/gen_tree.py" "$src.partial" --files "$FILES" --bytes "$BYTES"
  if [[ $MODE == git ]]; then
    # The repository lives beside the tree (src/.git is a "gitdir:" file), so
    # cp and rsync copy the same files we stage, not the object database too.
    git init -q --separate-git-dir="$src.git" "$src.partial"
    git -C "$src.partial" add -A
    git -C "$src.partial" -c user.name=bench -c user.email=bench@example.com commit -qm tree
    echo "gitdir: $src.git" >"$src.partial/.git"
  fi
  mv "$src.partial" "$src"
  sleep 2  # let the files age past the stat cache's racy window
fi

out=$WORK/out
rm -rf "$out"
mkdir -p "$out"
results=$out/times.txt
: >"$results"

# timed LABEL COMMAND...: appends "LABEL seconds" to $results.
timed() {
  local label=$1
  shift
  sync
  local start end
  start=$(date +%s%N)
  "$@" >"$out/last.log"
  end=$(date +%s%N)
  echo "$label $(((end - start) / 1000))" | awk '{printf "%s %.4f\n", $1, $2 / 1e6}' >>"$results"
}

for rep in $(seq 1 "$REPS"); do
  echo "repetition $rep/$REPS" >&2
  rm -rf "$out/run"
  mkdir -p "$out/run/stage"
  timed cp_fresh cp -a "$src" "$out/run/cp"
  timed rsync_fresh rsync -a "$src/" "$out/run/rsync/"
  timed ours_fresh "$BIN" "$src" "$out/run/stage" bench "$out/run/statcache" "$THREADS"
  cp "$out/last.log" "$out/ours_fresh.json"
  timed rsync_unchanged rsync -a --link-dest="$out/run/rsync" "$src/" "$out/run/rsync-again/"
  timed ours_unchanged "$BIN" "$src" "$out/run/stage" bench "$out/run/statcache" "$THREADS"
  cp "$out/last.log" "$out/ours_unchanged.json"
done

echo "last fresh snapshot:     $(cat "$out/ours_fresh.json")"
echo "last unchanged re-stage: $(cat "$out/ours_unchanged.json")"
python3 - "$results" "$MODE" "$REPS" <<'PY'
import collections, statistics, sys
times = collections.defaultdict(list)
for line in open(sys.argv[1]):
    label, seconds = line.split()
    times[label].append(float(seconds))
med = {k: statistics.median(v) for k, v in times.items()}
print(f"mode={sys.argv[2]} repetitions={sys.argv[3]} (median seconds; all runs in brackets)")
for label in ["cp_fresh", "rsync_fresh", "ours_fresh", "rsync_unchanged", "ours_unchanged"]:
    runs = " ".join(f"{t:.3f}" for t in times[label])
    print(f"  {label:16} {med[label]:7.3f}   [{runs}]")
fresh = med["ours_fresh"] / med["cp_fresh"]
unchanged = med["ours_unchanged"] / med["rsync_unchanged"]
print(f"fresh snapshot / cp -a:                 {fresh:.2f}  (target <= 1.1) {'ok' if fresh <= 1.1 else 'MISSED'}")
print(f"unchanged re-stage / rsync --link-dest: {unchanged:.2f}  (target <= 0.3) {'ok' if unchanged <= 0.3 else 'MISSED'}")
PY

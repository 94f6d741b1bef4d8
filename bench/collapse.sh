#!/usr/bin/env bash
# Collapsed output at --raw's pace (not a test; no simulator needed: the run's
# log dir is made up, no worker runs):
#   1. `tpurun logs RUN --raw` and `tpurun logs RUN` of a finished run with 4
#      logs of 50 MB of training-like lines (made once under /var/tmp): wall
#      and CPU time of each, best of REPS, and the ratio (target: <= 3x);
#   2. `tpurun logs RUN -f` (as `stage` follows) of a job printing 200k
#      lines/s per worker on 4 workers for 5 s: how far behind the job the
#      printed lines are, and how long after the run's end tpurun exits.
#
#   bench/collapse.sh
#   MB=10 RATE=100000 SECONDS_JOB=10 REPS=5 bench/collapse.sh
#   OLD_TPURUN=/path/to/old/tpurun bench/collapse.sh   # the same for another binary, after this one
#
# Timings are printed, never asserted.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
TPURUN_BIN=${TPURUN_BIN:-$root/build/tpurun}
[[ -x $TPURUN_BIN ]] || { echo "no tpurun binary at $TPURUN_BIN (set TPURUN_BIN)" >&2; exit 2; }
export USER=${USER:-$(id -un)}
for bin in "$TPURUN_BIN" ${OLD_TPURUN:+"$OLD_TPURUN"}; do
  echo "=== $bin"
  python3 "$root/bench/collapse.py" "$bin" --workers "${WORKERS:-4}" --mb "${MB:-50}" --reps "${REPS:-3}" \
    --rate "${RATE:-200000}" --seconds "${SECONDS_JOB:-5}"
done

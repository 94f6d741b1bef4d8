#!/usr/bin/env bash
# The cost of following an idle 256-worker run (not a test; no simulator
# needed: the run's log dir is made up, no worker runs). Compares this tree's
# tpurun, with its automatic watch (inotify here) and forced to poll as on NFS,
# against the fixed 200 ms polling of commit 2793bee:
#
#   bench/follow.sh                          # 256 workers, 30 s idle per binary
#   WORKERS=64 SECONDS_IDLE=10 bench/follow.sh
#   OLD_TPURUN=/path/to/old/tpurun bench/follow.sh
#
# Prints per binary: client CPU (/proc/PID/stat utime+stime) and syscalls/s
# (strace -c attached) while idle, and line latency (write to a worker log ->
# the line in tpurun's output); then the ratios and the targets (<= 2% of a
# core, <= 1 s).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
TPURUN_BIN=${TPURUN_BIN:-$root/build/tpurun}
OLD_COMMIT=${OLD_COMMIT:-2793bee}
command -v strace >/dev/null || { echo "bench/follow.sh: needs strace (scripts/install-deps)" >&2; exit 2; }
[[ -x $TPURUN_BIN ]] || { echo "no tpurun binary at $TPURUN_BIN (set TPURUN_BIN)" >&2; exit 2; }

if [[ -z ${OLD_TPURUN:-} ]]; then
  # The old follower, built once from its commit and kept for later runs.
  old=/var/tmp/tpurun-follow-old-$OLD_COMMIT
  if [[ ! -x $old/build/tpurun ]]; then
    echo "building tpurun at $OLD_COMMIT into $old (once)" >&2
    mkdir -p "$old/src"
    git -C "$root" archive "$OLD_COMMIT" | tar -x -C "$old/src"
    BUILD_DIR=$old/build TARGETS=tpurun "$old/src/scripts/build" >&2
  fi
  OLD_TPURUN=$old/build/tpurun
fi

python3 "$root/bench/follow.py" --workers "${WORKERS:-256}" --seconds "${SECONDS_IDLE:-30}" \
  --lines "${LINES:-8}" --every "${EVERY:-3}" \
  "auto=$TPURUN_BIN" "poll=$TPURUN_BIN:TPURUN_FOLLOW_WATCH=poll" "old-$OLD_COMMIT=$OLD_TPURUN"

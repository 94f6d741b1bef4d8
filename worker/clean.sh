# The remote half of the stale-lock cleanup (kill's, after the jobs are
# gone; docs/protocols.md). It re-checks on the worker at the last moment: a
# lockfile is removed only while no lock is held on it and no process holds a
# device.
#
# Args: LOCK_INODE|- LOGS(0|1) GLOB...
# Output (CLEAN_HEADER first):
#   busy PID                   a process holds a device: nothing removed
#   removed PATH | failed PATH | kept PATH REASON
#   end
# tpurun-embed: tokens
# tpurun-embed: include lib/prelude.sh
# tpurun-embed: include lib/lock_state.sh
echo "$CLEAN_HEADER"
want_ino=$1 logs=$2
shift 2
case $want_ino in -) ;; ''|*[!0-9]*) want_ino=- ;; esac
# tpurun-embed: include lib/device_find.sh
busy=$(find /proc/[0-9]*/fd -mindepth 1 -maxdepth 1 \( "$@" \) -printf '%h\n' -quit)
if [ -n "$busy" ]; then
  busy=${busy#/proc/}
  echo "busy ${busy%/fd}"
  echo end
  exit 0
fi
set -f
lf=$LIBTPU_LOCKFILE
if [ "$want_ino" != - ]; then
  if st=$(stat -c '%i %d' "$lf"); then
    # shellcheck disable=SC2086 # inode and device: two words
    set -- $st
    lock_state "$1" "$2"
    if [ "$1" != "$want_ino" ]; then
      echo "kept $lf replaced"
    elif [ "$held" = 1 ]; then
      echo "kept $lf held-by-$lpid"
    elif rm -f "$lf"; then
      echo "removed $lf"
    else
      echo "failed $lf"
    fi
  fi
fi
if [ "$logs" = 1 ] && { [ -e "$TPU_LOGS_DIR" ] || [ -L "$TPU_LOGS_DIR" ]; }; then
  if rm -rf "$TPU_LOGS_DIR"; then echo "removed $TPU_LOGS_DIR"; else echo "failed $TPU_LOGS_DIR"; fi
fi
echo end

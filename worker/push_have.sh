# shellcheck shell=sh
# Whether a worker has a snapshot already, asked by the stage in the
# worker's reservation (reserve.sh runs it) before a push
# (staging/push.hpp; docs/protocols.md). It is push.py's first answer, in sh,
# so that no python3 starts when the snapshot is there: the .tree link names
# this snapshot, which is a real dir, and nothing in it changed since push.py
# marked it whole (no entry's ctime is past the mtime of .stat-NAME: no file
# written, re-moded, added or removed; else push.py checks it file by file).
# The marker is touched for gc. With a run, the log dirs are made 0700 and
# must be the user's own, closed to others' writes.
#
# Every worker of a stage runs this on the way to the launch, and its cost
# is the processes it starts (about 2 ms of CPU each; on the simulator 16
# workers share 2 cores): one mkdir for the log dirs that are new, one find
# for the snapshot and the log dirs together, and the rest is the shell's
# own (test -ef for the link, a truncating open of the empty marker for its
# mtime). 8.8 ms a worker, where a readlink, touch, two mkdirs and two finds
# were 21.9.
#
# Args: STAGING_ROOT LOGS_ROOT USER NAME TREE [PROJECT RUN] (push.py's).
# Answers one line: PUSH_HAVE DIR[\0LOGDIR], or PUSH_NEED (then the push
# says why, or sends the snapshot).
# tpurun-embed: tokens
d=$1/$3 n=$4 tree=$5 m=$1/$3/.stat-$4 x=
ok=
# shellcheck disable=SC3013 # -ef: dash's, bash's and busybox's test have it; a sh without it fails the test, and push.py answers
if [ "$d/.tree-$tree" -ef "$d/$n" ] && [ -d "$d/$n" ] && [ ! -L "$d/$n" ] && [ -f "$m" ]; then
  if [ $# -lt 7 ]; then
    [ -n "$(find "$d/$n" -cnewer "$m" -print -quit 2>&1)" ] || ok=1
  else
    l=$2 u=$2/$3 p=$2/$3/$6 x=$2/$3/$6/$7
    [ -d "$l" ] || mkdir -p "$l" 2>/dev/null
    set --  # the log dirs not there yet, made 0700 by one mkdir
    for y in "$u" "$p" "$x"; do [ -e "$y" ] || [ -L "$y" ] || set -- "$@" "$y"; done
    [ $# -eq 0 ] || mkdir -m 700 "$@" 2>/dev/null
    ok=1
    for y in "$u" "$p" "$x"; do [ -d "$y" ] && [ ! -L "$y" ] && [ -O "$y" ] || ok=; done
    # A log dir is looked at itself, not walked (-samefile: by inode, so no
    # name is read as a pattern), and must be closed to others' writes; in
    # the snapshot, any entry changed since the marker. Either is printed,
    # and the first one ends the walk.
    [ -z "$ok" ] || [ -z "$(find "$d/$n" "$u" "$p" "$x" \
      \( \( -samefile "$u" -o -samefile "$p" -o -samefile "$x" \) -prune \( -perm /022 -print -quit -o -true \) \) \
      -o -cnewer "$m" -print -quit 2>&1)" ] || ok=
  fi
fi
# The marker's mtime moves with the open that truncates it (it is empty).
if [ -n "$ok" ] && true 2>/dev/null >"$m"; then
  if [ -z "$x" ]; then
    printf '%s %s\n' "$PUSH_HAVE" "$d/$n"
  else
    printf '%s %s\000%s\n' "$PUSH_HAVE" "$d/$n" "$x"
  fi
else
  echo "$PUSH_NEED"
fi

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
# Args: STAGING_ROOT LOGS_ROOT USER NAME TREE [PROJECT RUN] (push.py's).
# Answers one line: PUSH_HAVE DIR[\0LOGDIR], or PUSH_NEED (then the push
# says why, or sends the snapshot).
# tpurun-embed: tokens
d=$1/$3 n=$4 tree=$5
if [ "$(readlink "$d/.tree-$tree" 2>/dev/null)" = "$n" ] && [ -d "$d/$n" ] && [ ! -L "$d/$n" ] &&
  [ -f "$d/.stat-$n" ] && [ -z "$(find "$d/$n" -cnewer "$d/.stat-$n" -print -quit 2>&1)" ] &&
  touch -c "$d/.stat-$n" 2>/dev/null; then
  if [ $# -lt 7 ]; then
    printf '%s %s\n' "$PUSH_HAVE" "$d/$n"
  else
    l=$2 u=$2/$3 p=$2/$3/$6 x=$2/$3/$6/$7
    mkdir -p "$l" 2>/dev/null
    (umask 077; mkdir "$u" "$p" "$x" 2>/dev/null)
    ok=1
    for y in "$u" "$p" "$x"; do [ -d "$y" ] && [ ! -L "$y" ] && [ -O "$y" ] || ok=; done
    if [ -n "$ok" ] && [ -z "$(find "$u" "$p" "$x" -maxdepth 0 -perm /022 2>&1)" ]; then
      printf '%s %s\000%s\n' "$PUSH_HAVE" "$d/$n" "$x"
    else
      echo "$PUSH_NEED"
    fi
  fi
else
  echo "$PUSH_NEED"
fi

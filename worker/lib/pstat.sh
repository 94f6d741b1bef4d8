# pstat PID: sets pg (process group) and st (start time: field 22 of
# /proc/PID/stat, clock ticks after boot; with the pid it names one process
# for its whole life). Fails when the process is gone, a zombie or the
# record is unreadable. The command name may hold newlines and ") ", so the
# whole file is read and split after its last ") ".
pstat() {
  _s=
  while IFS= read -r _l; do _s="$_s$_l "; done </proc/"$1"/stat || return 1
  # shellcheck disable=SC2086 # split into the record's fields
  set -- ${_s##*) }
  [ $# -ge 20 ] || return 1
  case $1 in Z|X|x) return 1 ;; esac
  pg=$3
  shift 19
  st=$1
  case $pg in ''|*[!0-9]*) return 1 ;; esac
  case $st in ''|*[!0-9]*) return 1 ;; esac
}

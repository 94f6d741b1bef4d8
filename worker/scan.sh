# The TPU scan that status, kill, stage's preflight, top and doctor share
# (docs/protocols.md). It has to be fast (one walk over /proc/*/fd instead of
# lsof per device: fd_walk.pl) and to run on a stock image, so it is plain sh
# plus coreutils, procps, perl-base (Essential) or else findutils.
#
# Args: status|kill GLOB...   (kill: also every process, for the trees)
# Output (SCAN_HEADER first), one record per line:
#   caller UID USER GID | priv root|user | self PID
#   devices N                             how many TPU device files the globs match
#   hold PID DEVICE                       one per open TPU device file
#   lock 0 | lock 1 UID USER INODE HELD LOCK_PID|-
#   logs 0 | logs 1 UID USER              libtpu's log dir
#   begin start ... end start             kill mode: PID START for every process (start time
#                                         in clock ticks), taken before ps runs
#   begin pinfo ... end pinfo             ps lines: PID UID USER PGID SID PPID ELAPSED ARGS
#                                         for the holders and the lock's holder
#   begin proc ... end proc               kill mode, every process: PID PPID PGID SID UID ELAPSED ARGS
#   begin runid ... end runid             grep lines: /proc/PID/environ:RUN_ID_VARIABLE=VALUE
#   denied N                              fd dirs that could not be read (partial view)
#   end
# Every external program costs a fork and an exec on each worker, so there
# are few: one perl (or find) looks at the fds and at both files, and ps and
# grep run only when something holds the TPU (or for kill).
# tpurun-embed: tokens
# tpurun-embed: include lib/prelude.sh
# tpurun-embed: include lib/self_ids.sh
# tpurun-embed: include lib/lock_state.sh
# tpurun-embed: include lib/pstat.sh
# tpurun-embed: include lib/fd_walk.sh

# file_record PATH UID USER INODE DEV: an F line of the fd walk (its own
# positional parameters, so the globs in the script's stay).
file_record() {
  case $1 in
    "$LIBTPU_LOCKFILE")
      lock_state "$4" "$5"
      lock="lock 1 $2 $3 $4 $held $lpid" ;;
    "$TPU_LOGS_DIR") logs="logs 1 $2 $3" ;;
  esac
}

mode=$1
shift
self_ids
if [ "$uid" = 0 ] && [ -n "${SUDO_UID:-}" ]; then
  cuid=$SUDO_UID cuser=${SUDO_USER:-$SUDO_UID} cgid=${SUDO_GID:-$gid} priv=root
elif [ "$uid" = 0 ]; then
  cuid=0 cuser=root cgid=$gid priv=root
else
  cuid=$uid cuser=$(id -un) || cuser=$uid
  cgid=$gid priv=user
fi
printf '%s\ncaller %s %s %s\npriv %s\nself %s\n' "$SCAN_HEADER" "$cuid" "$cuser" "$cgid" "$priv" "$$"
ndev=0
for _g do
  for _f in $_g; do [ -e "$_f" ] && ndev=$((ndev + 1)); done
done
printf 'devices %s\n' "$ndev"

# "$@" holds the device globs. The walk's H lines are candidates: each is
# matched against the globs here (a case pattern is fnmatch, as -lname is).
found=$(fd_walk_perl "$@") || found=$(fd_walk_find "$@")
set -f
denied=0 pids='' last='' lock='lock 0' logs='logs 0'
while read -r kind a rest; do
  case $kind in
    H)
      p=${a#/proc/}
      p=${p%/fd}
      case $p in ''|*[!0-9]*) continue ;; esac
      m=0
      for g do
        # shellcheck disable=SC2254 # g is a glob: matched as one
        case $rest in $g) m=1; break ;; esac
      done
      [ "$m" = 1 ] || continue
      printf 'hold %s %s\n' "$p" "$rest"
      if [ "$p" != "$last" ]; then pids=$pids${pids:+,}$p last=$p; fi ;;
    F)
      # shellcheck disable=SC2086 # the record's words are file_record's arguments
      file_record "$a" $rest ;;
    *)
      case $rest in *'Permission denied') denied=$((denied + 1)) ;; esac ;;
  esac
done <<EOF
$found
EOF
printf '%s\n%s\n' "$lock" "$logs"
case $lock in
  'lock 1 '*' 1 '[1-9]*)
    case ",$pids," in *",$lpid,"*) ;; *) pids=$pids${pids:+,}$lpid ;; esac ;;
esac

if [ "$mode" = kill ]; then
  # Before ps: a pid reused in between then shows an older start time than
  # the process ps describes, and kill refuses to signal it.
  echo 'begin start'
  set +f
  for f in /proc/[0-9]*/stat; do
    set -f
    p=${f#/proc/}
    p=${p%/stat}
    pstat "$p" && echo "$p $st"
  done
  set -f
  echo 'end start'
fi
if [ -n "$pids" ]; then
  echo 'begin pinfo'
  LC_ALL=C.UTF-8 ps -ww -o pid=,uid=,user:32=,pgid=,sid=,ppid=,etimes=,args= -p "$pids"
  echo 'end pinfo'
fi
set --
if [ "$mode" = kill ]; then
  echo 'begin proc'
  LC_ALL=C.UTF-8 ps -e -ww -o pid=,ppid=,pgid=,sid=,uid=,etimes=,args=
  echo 'end proc'
  set +f
  set -- /proc/[0-9]*/environ
else
  IFS=,
  for p in $pids; do set -- "$@" "/proc/$p/environ"; done
  IFS=' 	
'
fi
if [ $# -gt 0 ]; then
  echo 'begin runid'
  grep -azH "^$RUN_ID_VARIABLE=" "$@" | tr '\0\n' '\n '
  echo 'end runid'
fi
printf 'denied %s\nend\n' "$denied"

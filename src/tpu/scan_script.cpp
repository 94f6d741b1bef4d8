// The scan that status, kill and stage's preflight share. It has to be fast
// (one walk over /proc/*/fd instead of lsof per device: fd_walk_script.cpp)
// and to run on a stock image, so it is plain sh plus coreutils, procps,
// perl-base (Essential) or else findutils.
#include "tpu/scripts.hpp"
#include "tpurun/tpu/scan.hpp"
#include "tpurun/transport/shell_quote.hpp"

namespace tpurun::tpu {

const char* const kShPrelude = R"sh(export LC_ALL=C
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
exec 2>/dev/null
)sh";

// "$@" holds the device globs; afterwards it holds
// `-lname PREFIX* -printf '' ( -lname G1 -o -lname G2 ... ) -printf '' ! -lname *NEWLINE*`.
// - find reads the link anew for every -lname it evaluates, and reading
//   /proc/PID/fd/N is most of the scan's cost on a host with many open fds
//   (data loaders). PREFIX, the globs' common literal start (e.g. /dev/; used
//   when there are several globs and it is more than /), lets most fds fail on
//   one read instead of one per glob. Every glob implies it: no answer changes.
// - find's optimizer reorders tests (it would run the newline test first, a
//   read for every fd), but never across an action: the empty -printf ''s keep
//   the order as written.
// - A glob's `*` matches a newline, and a link target with one in it could
//   forge records in find's line output (another user can make such a target:
//   a file opened in their own mount namespace). No real device name has one.
const char* const kShDeviceFind = R"sh(n=$# pre= first=1
for g do
  set -- "$@" -o -lname "$g"
  lit=${g%%[][*?\\]*}
  if [ "$first" = 1 ]; then
    pre=$lit first=0
  else
    while [ -n "$pre" ]; do
      case $lit in "$pre"*) break ;; esac
      pre=${pre%?}
    done
  fi
done
shift "$n"
if [ $# -gt 3 ] && [ -n "${pre#/}" ]; then
  shift
  set -- -lname "$pre*" -printf '' \( "$@" \) -printf '' ! -lname '*
*'
elif [ $# -gt 0 ]; then
  shift
  set -- \( "$@" \) -printf '' ! -lname '*
*'
else
  set -- -false
fi
)sh";

// pstat PID: sets pg (process group) and st (start time: field 22 of
// /proc/PID/stat, clock ticks after boot; with the pid it names one process
// for its whole life). Fails when the process is gone, a zombie or the
// record is unreadable. The command name may hold newlines and ") ", so the
// whole file is read and split after its last ") ".
const char* const kShStatFunction = R"sh(pstat() {
  _s=
  while IFS= read -r _l; do _s="$_s$_l "; done </proc/"$1"/stat || return 1
  set -- ${_s##*) }
  [ $# -ge 20 ] || return 1
  case $1 in Z|X|x) return 1 ;; esac
  pg=$3
  shift 19
  st=$1
  case $pg in ''|*[!0-9]*) return 1 ;; esac
  case $st in ''|*[!0-9]*) return 1 ;; esac
}
)sh";

// lock_state INODE DEV: is a lock held on that file (DEV: st_dev, decimal)?
// /proc/locks names files as MAJOR:MINOR:INODE (hex, hex, decimal) and is
// world-readable, so this works without root. Sets held=0|1 and lpid (the
// holder, or -).
const char* const kShLockFunction = R"sh(lock_state() {
  held=0 lpid=-
  case $1 in ''|*[!0-9]*) return ;; esac
  case $2 in ''|*[!0-9]*) return ;; esac
  _maj=$(( ($2 >> 8) & 0xfff )) _min=$(( ($2 & 0xff) | (($2 >> 12) & 0xfff00) ))
  while read -r _ _kind _ _ _pid _where _; do
    [ "$_kind" = '->' ] && continue
    case $_where in
      *:*:"$1")
        _m=${_where%%:*} _r=${_where#*:}
        _r=${_r%%:*}
        case $_m in ''|*[!0-9a-f]*) continue ;; esac
        case $_r in ''|*[!0-9a-f]*) continue ;; esac
        case $_pid in ''|*[!0-9]*) continue ;; esac
        if [ $((0x$_m)) = "$_maj" ] && [ $((0x$_r)) = "$_min" ]; then
          held=1 lpid=$_pid
          return
        fi ;;
    esac
  done </proc/locks
}
)sh";

namespace {

// Output (TPURUN-SCAN 1), one record per line:
//   caller UID USER GID | priv root|user | self PID
//   devices N                             how many TPU device files the globs match
//   hold PID DEVICE                       one per open TPU device file
//   lock 0 | lock 1 UID USER INODE HELD LOCK_PID|-
//   logs 0 | logs 1 UID USER              /tmp/tpu_logs
//   begin start ... end start             kill mode: PID START for every process (start time
//                                         in clock ticks), taken before ps runs
//   begin pinfo ... end pinfo             ps lines: PID UID USER PGID SID PPID ELAPSED ARGS
//                                         for the holders and the lock's holder
//   begin proc ... end proc               kill mode, every process: PID PPID PGID SID UID ELAPSED ARGS
//   begin runid ... end runid             grep lines: /proc/PID/environ:TPURUN_RUN_ID=VALUE
//   denied N                              fd dirs that could not be read (partial view)
//   end
// Every external program costs a fork and an exec on each worker, so there
// are few: one perl (or find) looks at the fds and at both files, and ps and
// grep run only when something holds the TPU (or for kill).
const char* const kScanHead = R"sh(mode=$1
shift
uid= gid=
while read -r _k _ _e _; do
  case $_k in
    Uid:) uid=$_e ;;
    Gid:) gid=$_e; break ;;
  esac
done </proc/self/status
if [ "$uid" = 0 ] && [ -n "${SUDO_UID:-}" ]; then
  cuid=$SUDO_UID cuser=${SUDO_USER:-$SUDO_UID} cgid=${SUDO_GID:-$gid} priv=root
elif [ "$uid" = 0 ]; then
  cuid=0 cuser=root cgid=$gid priv=root
else
  cuid=$uid cuser=$(id -un) || cuser=$uid
  cgid=$gid priv=user
fi
printf 'TPURUN-SCAN 1\ncaller %s %s %s\npriv %s\nself %s\n' "$cuid" "$cuser" "$cgid" "$priv" "$$"
ndev=0
for _g do
  for _f in $_g; do [ -e "$_f" ] && ndev=$((ndev + 1)); done
done
printf 'devices %s\n' "$ndev"
)sh";

// file_record PATH UID USER INODE DEV: an F line of fd_walk (its own
// positional parameters, so the globs in the script's stay).
const char* const kScanFileRecord = R"sh(file_record() {
  case $1 in
    /tmp/libtpu_lockfile)
      lock_state "$4" "$5"
      lock="lock 1 $2 $3 $4 $held $lpid" ;;
    /tmp/tpu_logs) logs="logs 1 $2 $3" ;;
  esac
}
)sh";

// "$@" holds the device globs. fd_walk's H lines are candidates: each is
// matched against the globs here (a case pattern is fnmatch, as -lname is).
const char* const kScanBody =
    R"sh(found=$(fd_walk "$@")
set -f
denied=0 pids= last= lock='lock 0' logs='logs 0'
while read -r kind a rest; do
  case $kind in
    H)
      p=${a#/proc/}
      p=${p%/fd}
      case $p in ''|*[!0-9]*) continue ;; esac
      m=0
      for g do
        case $rest in $g) m=1; break ;; esac
      done
      [ "$m" = 1 ] || continue
      printf 'hold %s %s\n' "$p" "$rest"
      if [ "$p" != "$last" ]; then pids=$pids${pids:+,}$p last=$p; fi ;;
    F) file_record "$a" $rest ;;
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
  grep -azH '^TPURUN_RUN_ID=' "$@" | tr '\0\n' '\n '
  echo 'end runid'
fi
printf 'denied %s\nend\n' "$denied"
)sh";

}  // namespace

const std::string& scan_script() {
  static const std::string script = std::string("# tpurun TPU scan (TPURUN-SCAN 1)\n") + kShPrelude +
                                    kShLockFunction + kShStatFunction + fd_walk_function() + kScanFileRecord +
                                    kScanHead + kScanBody;
  return script;
}

std::string script_command_line(Privilege privilege, const std::vector<std::string>& args) {
  const std::string tail = "sh -s --" + (args.empty() ? std::string() : " " + shell_join(args));
  switch (privilege) {
    case Privilege::prefer_root:
      // sudo -n refuses before reading stdin, so the fallback still gets the script.
      return "sudo -n " + tail + " 2>/dev/null || exec " + tail;
    case Privilege::root: return "exec sudo -n " + tail;
    case Privilege::login_user: break;
  }
  return "exec " + tail;
}

}  // namespace tpurun::tpu

namespace tpurun {

RemoteCommand build_scan_command(const ScanRequest& request) {
  std::vector<std::string> args{request.process_table ? "kill" : "status"};
  args.insert(args.end(), request.device_globs.begin(), request.device_globs.end());
  return {tpu::script_command_line(tpu::Privilege::prefer_root, args), tpu::scan_script()};
}

}  // namespace tpurun

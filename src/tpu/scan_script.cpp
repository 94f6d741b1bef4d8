// The scan that status, kill and stage's preflight share. It has to be fast
// (one `find` over /proc/*/fd instead of lsof per device) and to run on a
// stock image, so it is plain sh plus coreutils, findutils and procps.
#include "tpu/scripts.hpp"

#include "tpurun/shell_quote.hpp"
#include "tpurun/tpu_scan.hpp"

namespace tpurun::tpu {

const char* const kShPrelude = R"sh(export LC_ALL=C
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
exec 2>/dev/null
)sh";

// "$@" holds the device globs; afterwards it holds `-lname G1 -o -lname G2 ...`.
const char* const kShDeviceFind = R"sh(n=$#
for g do set -- "$@" -o -lname "$g"; done
shift "$n"
if [ $# -gt 0 ]; then shift; else set -- -false; fi
)sh";

// lock_state INODE DEV_HEX: is a lock held on that file? /proc/locks names
// files as MAJOR:MINOR:INODE (hex, hex, decimal) and is world-readable, so
// this works without root. Sets held=0|1 and lpid (the holder, or -).
const char* const kShLockFunction = R"sh(lock_state() {
  held=0 lpid=-
  _d=$((0x$2))
  _maj=$(( (_d >> 8) & 0xfff )) _min=$(( (_d & 0xff) | ((_d >> 12) & 0xfff00) ))
  while read -r _ _kind _ _ _pid _where _; do
    [ "$_kind" = '->' ] && continue
    case $_where in
      *:*:"$1")
        _m=${_where%%:*} _r=${_where#*:}
        _r=${_r%%:*}
        if [ $((0x$_m)) = "$_maj" ] && [ $((0x$_r)) = "$_min" ]; then
          held=1 lpid=$_pid
          return
        fi ;;
    esac
  done </proc/locks
}
)sh";

namespace {

// Output, one record per line (TPURUN-SCAN 1):
//   caller UID USER | priv root|user | self PID
//   hold PID DEVICE                         one per open TPU device file
//   lock 0 | lock 1 UID USER INODE HELD LOCK_PID|-
//   logs 0 | logs 1 UID USER                /tmp/tpu_logs
//   pinfo PID UID USER PGID SID PPID ELAPSED ARGS...   holders and the lock holder
//   proc PID PPID PGID SID UID ELAPSED ARGS...          kill mode: every process
//   runid PID VALUE
//   denied N                                fd dirs we could not read (partial view)
//   end
const char* const kScanHead = R"sh(mode=$1
shift
uid=$(id -u)
if [ "$uid" = 0 ] && [ -n "${SUDO_UID:-}" ]; then
  cuid=$SUDO_UID cuser=${SUDO_USER:-$SUDO_UID}
else
  cuid=$uid cuser=$(id -un) || cuser=$uid
fi
priv=user
[ "$uid" = 0 ] && priv=root
printf 'TPURUN-SCAN 1\ncaller %s %s\npriv %s\nself %s\n' "$cuid" "$cuser" "$priv" "$$"
)sh";

const char* const kScanBody = R"sh(found=$(find /proc/[0-9]*/fd -mindepth 1 -maxdepth 1 \( "$@" \) -printf '%h %l\n' 2>&1)
denied=0 pids= last=
while read -r a b; do
  case $a in
    /proc/*/fd)
      p=${a#/proc/}
      p=${p%/fd}
      printf 'hold %s %s\n' "$p" "$b"
      if [ "$p" != "$last" ]; then pids=$pids${pids:+,}$p last=$p; fi ;;
    *)
      case $b in *'Permission denied') denied=$((denied + 1)) ;; esac ;;
  esac
done <<EOF
$found
EOF

set -f
if st=$(stat -c '%u %U %i %D' /tmp/libtpu_lockfile); then
  set -- $st
  lock_state "$3" "$4"
  printf 'lock 1 %s %s %s %s %s\n' "$1" "$2" "$3" "$held" "$lpid"
  case ",$pids," in
    *",$lpid,"*) ;;
    *) [ "$held" = 1 ] && [ "$lpid" -gt 0 ] && pids=$pids${pids:+,}$lpid ;;
  esac
else
  echo 'lock 0'
fi
if st=$(stat -c '%u %U' /tmp/tpu_logs); then echo "logs 1 $st"; else echo 'logs 0'; fi

if [ -n "$pids" ]; then
  LC_ALL=C.UTF-8 ps -ww -o pid=,uid=,user:32=,pgid=,sid=,ppid=,etimes=,args= -p "$pids" | sed 's/^ */pinfo /'
fi
set --
if [ "$mode" = kill ]; then
  LC_ALL=C.UTF-8 ps -e -ww -o pid=,ppid=,pgid=,sid=,uid=,etimes=,args= | sed 's/^ */proc /'
  set +f
  set -- /proc/[0-9]*/environ
else
  IFS=,
  for p in $pids; do set -- "$@" "/proc/$p/environ"; done
  IFS=' 	
'
fi
if [ $# -gt 0 ]; then
  grep -azH '^TPURUN_RUN_ID=' "$@" | tr '\0\n' '\n ' |
    sed -n 's|^/proc/\([0-9][0-9]*\)/environ:TPURUN_RUN_ID=|runid \1 |p'
fi
printf 'denied %s\nend\n' "$denied"
)sh";

}  // namespace

const std::string& scan_script() {
  static const std::string script = std::string("# tpurun TPU scan (TPURUN-SCAN 1)\n") + kShPrelude +
                                    kShLockFunction + kScanHead + kShDeviceFind + kScanBody;
  return script;
}

std::string script_command_line(Privilege privilege, const std::vector<std::string>& args) {
  const std::string tail = "sh -s --" + (args.empty() ? std::string() : " " + shell_join(args));
  switch (privilege) {
    case Privilege::prefer_root:
      // sudo -n refuses before reading stdin, so the fallback still gets the script.
      return "sudo -n " + tail + " 2>/dev/null || exec " + tail;
    case Privilege::root:
      return "exec sudo -n " + tail;
    case Privilege::login_user:
      break;
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

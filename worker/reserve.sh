# shellcheck shell=sh
# shellcheck disable=SC2154 # lock, run, required, scan, wait, hold, now: set by the header tpurun writes before this
# The worker's side of a reservation (runs/launch/reservation.hpp;
# docs/protocols.md): takes the lock, scans the TPU under it, says so, and
# waits for the stage's words on its stdin. Run by `sh -s` as the login user;
# tpurun writes a header before it:
#   lock=PATH run=RUN_ID|- required=0|1 scan=0|1 wait=SECONDS hold=SECONDS
#   now=YYYY-MM-DDTHH:MM:SSZ (the dev VM's clock, UTC; empty: ask date)
#   and, when scan=1, a function tpurun_scan_here (scan.sh, as status runs it).
#
# The lock is flock(2) on a file everyone can open read-only: a read-only
# descriptor may take an exclusive flock, and the file is never written, so
# whoever made it first (mode 0644), nobody needs to write it. flock ends
# with the last descriptor of its open file: the wrapper keeps one while the
# job runs, so a worker that dies or reboots leaves nothing locked behind.
# Who holds it is told by one record per user, "$lock.<uid>": "<pid> <run>
# <user> <since>", written by the holder (that user's only file there, so no
# one can change another's); a record whose pid is gone is stale.
#
# Between "ready" and the launch the script waits on stdin: RESERVE_GO execs
# the launch script that follows, RESERVE_KEEPALIVE is the stage's keepalive,
# RESERVE_RUN takes the lines up to RESERVE_END_OF_COMMAND as a command to
# run there (stdin from /dev/null; the stage's own question, such as whether
# the worker has the snapshot: one round trip on the session it holds), ended
# by RESERVE_DONE; anything else or EOF (the stage gave up, was interrupted,
# or its connection broke) ends it, and the lock with it. A watchdog ends it
# too when no keepalive came for $hold seconds (a dev VM that froze without
# closing the TCP connection would otherwise hold the worker for hours); the
# watchdog goes with the script, so nothing of a reservation outlives it.
# tpurun-embed: tokens
# Every worker runs this on each stage, and a process start is most of its
# cost (1-2 ms each on the simulator's hosts): the uid comes from the kernel's
# own record, the name from the login (sshd sets LOGNAME and USER), and the
# time from tpurun's header (now=, UTC) unless the lock was waited for.
# tpurun-embed: include lib/self_ids.sh
self_ids
case $uid in ''|*[!0-9]*) uid=$(id -u) ;; esac
record="$lock.$uid"
holders() {
  for f in "$lock".[0-9]*; do
    [ -f "$f" ] || continue
    read -r hpid hrest <"$f" 2>/dev/null || continue
    case $hpid in ''|*[!0-9]*) continue ;; esac
    [ -d "/proc/$hpid" ] && echo "$RESERVE_HOLDER $hpid $hrest"
  done
  return 0
}
take() {
  if command -v flock >/dev/null 2>&1; then
    if [ "$wait" -gt 0 ]; then flock -x -w "$wait" 9; else flock -x -n 9; fi
  else
    perl - "$wait" <<'TPURUN_TAKE'
use Fcntl ":flock"; open(my $f, "<&=", 9) or exit 2; my $end = time + $ARGV[0];
until (flock($f, LOCK_EX | LOCK_NB)) { exit 1 if time >= $end; select(undef, undef, undef, 0.1) } exit 0
TPURUN_TAKE
  fi
}
if [ -L "$lock" ]; then
  echo "$RESERVE_REFUSED $lock is a symbolic link (made by $(stat -c %U "$lock" 2>/dev/null)): remove it"
  exit 0
fi
[ -e "$lock" ] || (umask 022 && : >>"$lock") 2>/dev/null
if [ ! -f "$lock" ] || [ ! -r "$lock" ]; then
  echo "$RESERVE_REFUSED $lock cannot be read by ${LOGNAME:-uid $uid} ($(ls -ld "$lock" 2>&1)): its owner or root must remove it"
  exit 0
fi
exec 9<"$lock"
tpurun_reserved=
if take; then
  tpurun_reserved=1
  tpurun_me=${LOGNAME:-${USER:-}}
  [ -n "$tpurun_me" ] || tpurun_me=$(id -un)
  tpurun_since=$now  # the launch's record says the same
  [ "$wait" = 0 ] && [ -n "$now" ] || tpurun_since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  # Through a temp file and mv, so that a name another user made first in
  # /tmp is never written through: mv replaces a symlink at $record, and the
  # temp file is made with noclobber (dash opens a new name O_EXCL, and
  # refuses an existing file).
  set -C
  printf '%s %s %s %s\n' "$$" "$run" "$tpurun_me" "$tpurun_since" >"$record.tmp$$" &&
    mv -f "$record.tmp$$" "$record"
  set +C
  echo "$RESERVE_OK"
else
  echo "$RESERVE_BUSY"
  # The holder writes its record just after it takes the lock: a moment.
  tries=0
  until [ -n "$(holders)" ] || [ "$tries" -ge 20 ]; do sleep 0.05; tries=$((tries + 1)); done
  holders
  [ "$required" = 1 ] && exit 0
  exec 9<&-
fi
export tpurun_reserved record tpurun_me tpurun_since
if [ "$scan" = 1 ]; then tpurun_scan_here; fi
# One process (perl, as the wrapper needs anyway; it shows as
# "tpurun-reserve watchdog Ns"), so that ending it leaves nothing behind;
# none where perl is missing (EOF still ends the wait). It is ended with
# SIGKILL: a SIGTERM that reaches the forked child before its exec is caught
# by this shell's trap, copied into the child, and lost, and that watchdog
# then ends a reservation that is being kept alive.
wd=
watchdog() {
  command -v perl >/dev/null 2>&1 || return 0
  perl - "$hold" $$ >/dev/null 2>&1 9<&- <<'TPURUN_WATCHDOG' &
$0 = "tpurun-reserve watchdog $ARGV[0]s";
sleep $ARGV[0]; kill "TERM", $ARGV[1]
TPURUN_WATCHDOG
  wd=$!
}
unwatch() { [ -z "$wd" ] || kill -9 "$wd" 2>/dev/null; wd=; }
trap 'unwatch; exit 0' HUP INT TERM
trap unwatch EXIT
watchdog
echo "$RESERVE_READY"
while IFS= read -r word; do
  unwatch
  case $word in
    "$RESERVE_GO") trap - HUP INT TERM EXIT; exec sh -s ;;
    "$RESERVE_KEEPALIVE") watchdog ;;
    "$RESERVE_RUN")
      cmd='' ended=''
      while IFS= read -r l; do
        if [ "$l" = "$RESERVE_END_OF_COMMAND" ]; then ended=1; break; fi
        cmd="$cmd$l
"
      done
      [ -n "$ended" ] || break
      (eval "$cmd") </dev/null
      echo "$RESERVE_DONE"
      watchdog ;;
    *) break ;;
  esac
done
exit 0

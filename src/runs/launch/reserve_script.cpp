// The worker's side of a reservation: a POSIX sh script (sent to `sh -s`)
// that takes the lock, scans the TPU under it, says so, and waits for the
// launch script or for EOF. Its answer is parsed here too.
#include <fmt/format.h>

#include <sstream>

#include "runs/launch/reservation.hpp"
#include "tpurun/tpu/scan.hpp"
#include "tpurun/transport/shell_quote.hpp"

namespace tpurun {
namespace {

// The lock is flock(2) on a file everyone can open read-only: a read-only
// descriptor may take an exclusive flock, and the file is never written, so
// whoever made it first (mode 0644), nobody needs to write it. flock ends
// with the last descriptor of its open file: the wrapper keeps one while the
// job runs, so a worker that dies or reboots leaves nothing locked behind.
// Who holds it is told by one record per user, "$lock.<uid>": "<pid> <run>
// <user> <since>", written by the holder (that user's only file there, so no
// one can change another's); a record whose pid is gone is stale.
//
// Between "ready" and the launch the script waits on stdin: "go" execs the
// launch script that follows, "wait" is the stage's keepalive, "run" takes
// the next line as a command to run there (stdin from /dev/null; the stage's
// own question, such as whether the worker has the snapshot: one round trip
// on the session it holds), ended by "TPURUN-RESERVE done"; anything else or
// EOF (the stage gave up, was interrupted, or its connection broke)
// ends it, and the lock with it. A watchdog ends it too when no keepalive
// came for $hold seconds (a dev VM that froze without closing the TCP
// connection would otherwise hold the worker for hours); the watchdog goes
// with the script, so nothing of a reservation outlives it.
constexpr const char* kReserveBody = R"SH(
record="$lock.$(id -u)"
holders() {
  for f in "$lock".[0-9]*; do
    [ -f "$f" ] || continue
    read -r hpid hrest <"$f" 2>/dev/null || continue
    case $hpid in ''|*[!0-9]*) continue ;; esac
    [ -d "/proc/$hpid" ] && echo "TPURUN-HOLDER $hpid $hrest"
  done
  return 0
}
take() {
  if command -v flock >/dev/null 2>&1; then
    if [ "$wait" -gt 0 ]; then flock -x -w "$wait" 9; else flock -x -n 9; fi
  else
    perl -e 'use Fcntl ":flock"; open(my $f, "<&=", 9) or exit 2; my $end = time + $ARGV[0];
      until (flock($f, LOCK_EX | LOCK_NB)) { exit 1 if time >= $end; select(undef, undef, undef, 0.1) } exit 0' "$wait"
  fi
}
if [ -L "$lock" ]; then
  echo "TPURUN-RESERVE refused $lock is a symbolic link (made by $(stat -c %U "$lock" 2>/dev/null)): remove it"
  exit 0
fi
[ -e "$lock" ] || (umask 022 && : >>"$lock") 2>/dev/null
if [ ! -f "$lock" ] || [ ! -r "$lock" ]; then
  echo "TPURUN-RESERVE refused $lock cannot be read by $(id -un) ($(ls -ld "$lock" 2>&1)): its owner or root must remove it"
  exit 0
fi
exec 9<"$lock"
tpurun_reserved=
if take; then
  tpurun_reserved=1
  tpurun_me=$(id -un) tpurun_since=$(date -u +%Y-%m-%dT%H:%M:%SZ)  # the launch's record says the same
  printf '%s %s %s %s\n' "$$" "$run" "$tpurun_me" "$tpurun_since" >"$record.tmp$$" &&
    mv -f "$record.tmp$$" "$record"
  echo "TPURUN-RESERVE ok"
else
  echo "TPURUN-RESERVE busy"
  # The holder writes its record just after it takes the lock: a moment.
  tries=0
  until [ -n "$(holders)" ] || [ "$tries" -ge 20 ]; do sleep 0.05; tries=$((tries + 1)); done
  holders
  [ "$required" = 1 ] && exit 0
  exec 9<&-
fi
export tpurun_reserved record tpurun_me tpurun_since
if [ "$scan" = 1 ]; then tpurun_scan_here; fi
# One process (perl, as the wrapper needs anyway), so that ending it leaves
# nothing behind; none where perl is missing (EOF still ends the wait). It is
# ended with SIGKILL: a SIGTERM that reaches the forked child before its exec
# is caught by this shell's trap, copied into the child, and lost, and that
# watchdog then ends a reservation that is being kept alive.
wd=
watchdog() {
  command -v perl >/dev/null 2>&1 || return 0
  perl -e 'sleep $ARGV[0]; kill "TERM", $ARGV[1]' "$hold" $$ </dev/null >/dev/null 2>&1 9<&- &
  wd=$!
}
unwatch() { [ -z "$wd" ] || kill -9 "$wd" 2>/dev/null; wd=; }
trap 'unwatch; exit 0' HUP INT TERM
trap unwatch EXIT
watchdog
echo "TPURUN-RESERVE ready"
while IFS= read -r word; do
  unwatch
  case $word in
    go) trap - HUP INT TERM EXIT; exec sh -s ;;
    wait) watchdog ;;
    run) IFS= read -r cmd || break; (eval "$cmd") </dev/null; echo "TPURUN-RESERVE done"; watchdog ;;
    *) break ;;
  esac
done
exit 0
)SH";

constexpr const char* kReady = "TPURUN-RESERVE ready";

}  // namespace

std::string reserve_script(const ReserveSpec& spec) {
  std::ostringstream s;
  s << "lock=" << shell_quote(spec.lock_path) << "\n";
  s << "run=" << shell_quote(spec.run_id.empty() ? "-" : spec.run_id) << "\n";
  s << "required=" << (spec.required ? 1 : 0) << " scan=" << (spec.scan ? 1 : 0) << " wait=" << spec.wait_s
    << " hold=" << spec.hold_s << "\n";
  if (spec.scan) {
    // The TPU scan (tpu/scan_script), as `status` runs it: as root where sudo
    // lets us, else as the user; its own script on its stdin each time.
    const RemoteCommand scan = build_scan_command(ScanRequest{spec.device_globs, false});
    s << "tpurun_scan_here() {\n  ( " << scan.command_line << " ) <<'TPURUN_SCAN_EOF'\n"
      << scan.stdin_data << (scan.stdin_data.empty() || scan.stdin_data.back() == '\n' ? "" : "\n")
      << "TPURUN_SCAN_EOF\n}\n";
  }
  s << kReserveBody;
  return s.str();
}

bool reserve_answer_complete(const std::string& out) {
  return out.find(kReady) != std::string::npos || out.find("TPURUN-RESERVE busy") != std::string::npos ||
         out.find("TPURUN-RESERVE refused") != std::string::npos;
}

ReserveAnswer parse_reserve_answer(const std::string& out) {
  ReserveAnswer a;
  std::istringstream lines(out);
  std::string line;
  std::string scan_text;
  bool in_scan = false;
  while (std::getline(lines, line)) {
    if (line == "TPURUN-RESERVE ok") {
      a.state = ReserveAnswer::State::ok;
      in_scan = true;
    } else if (line == "TPURUN-RESERVE busy") {
      a.state = ReserveAnswer::State::busy;
      in_scan = true;
    } else if (line.rfind("TPURUN-RESERVE refused ", 0) == 0) {
      a.state = ReserveAnswer::State::refused;
      a.why = line.substr(23);
    } else if (line.rfind("TPURUN-HOLDER ", 0) == 0) {
      std::istringstream f(line.substr(14));
      ReservationHolder h;
      if (f >> h.pid >> h.run_id >> h.user >> h.since) a.holders.push_back(h);
    } else if (line == kReady) {
      a.ready = true;
      in_scan = false;
    } else if (in_scan) {
      scan_text += line + "\n";
    }
  }
  a.scan_text = std::move(scan_text);
  return a;
}

std::string holder_text(const ReservationHolder& h) {
  const std::string run = h.run_id == "-" ? "a stage" : "run " + h.run_id;
  return fmt::format("{}'s {} (pid {}, since {})", h.user, run, h.pid, h.since);
}

}  // namespace tpurun

#include "tpurun/runs/launch/launch.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <sstream>

#include "runs/record/log_dir_layout.hpp"
#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/transport/shell_quote.hpp"

namespace tpurun {
namespace {

// Runs on the worker under `sh -s`; the script itself arrives on stdin, so
// nothing in it shows in any process's argv. The generated header sets the
// variables, `job_env` (export lines, values quoted: the --env values live
// only there and in the job's environment, never in an argv) and "$@" (the
// command). Layout of the processes it leaves behind:
//   wrapper  (setsid: own session, no TPURUN_* env, so `tpurun kill` spares it;
//             perl relaying the job's output to the log, else sh)
//     └ job  (setsid again: pid = pgid = sid; what `tpurun kill` signals)
// The wrapper waits for the job and records its exit code, even when the job
// is killed by a signal, so the log dir always says how each worker ended.
// It writes only inside the log dir, and only once it has checked that the
// dir is the user's own and closed to other users' writes.
constexpr const char* kLauncherBody = R"SH(
log="$logdir/worker$worker.log"
# unreachable WHAT PATH CODE: why PATH cannot be seen. A dir above it that
# exists but cannot be entered is the same user with another uid here than on
# the dev VM (NFS owns files by number), not a missing mount.
unreachable() {
  _d=$2
  while [ "$_d" != / ] && [ ! -e "$_d" ]; do _d=${_d%/*}; [ -n "$_d" ] || _d=/; done
  if [ -d "$_d" ] && [ ! -x "$_d" ]; then
    echo "$1 $2 cannot be reached on this worker: $_d belongs to uid $(stat -c %u "$_d") (mode $(stat -c %a "$_d")), and you are uid $(id -u) here; the same user has another uid on the dev VM, and NFS owns files by number (tpurun doctor; docs/cloud.md)" >&2
  else
    echo "$1 $2 is not visible on this worker: is the shared (NFS) mount there?" >&2
  fi
  exit "$3"
}
# revalidate PATH: opens each dir on the way to PATH, from the top. On NFS
# this worker's client may keep a stale view of a dir that another host made,
# removed or renamed (cached lookups, found or not, for a minute and more);
# opening a dir is NFS's close-to-open check of it, and a changed dir drops
# the names cached in it. Only on the way to an error, so it costs nothing.
revalidate() {
  _rest=${1#/} _p=
  while [ -n "$_rest" ]; do
    _p=$_p/${_rest%%/*}
    case $_rest in */*) _rest=${_rest#*/} ;; *) _rest= ;; esac
    true <"$_p" 2>/dev/null || return 0
  done
}
[ -d "$logdir" ] || revalidate "$logdir"
[ -d "$logdir" ] || unreachable "log dir" "$logdir" 98
if [ -L "$logdir" ] || [ ! -O "$logdir" ] || [ -n "$(find "$logdir" -maxdepth 0 -perm /022 2>/dev/null)" ]; then
  echo "log dir $logdir is not $(id -un)'s own, or others may write to it: refusing to write there" >&2; exit 94
fi
cd "$snapshot" 2>/dev/null || { revalidate "$snapshot"; cd "$snapshot" 2>/dev/null; } || unreachable snapshot "$snapshot" 97
command -v setsid >/dev/null 2>&1 || { echo "setsid (util-linux) is missing on this worker" >&2; exit 96; }
if [ "$max_attempts" -gt 1 ]; then
  printf '==== tpurun: attempt %s of %s on %s at %s ====\n' "$attempt" "$max_attempts" "$(hostname)" \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$log"
fi
export pidf exitf job_env
# Fd 9, when open, is this worker's reservation (reserve_script.cpp): the
# wrapper keeps it while the job runs, and the job does not get it.
if command -v perl >/dev/null 2>&1; then
  # The wrapper says "<its pid> <the job's pid>" on fd 3 once the job has
  # started, and closes it: this reads that at once, with no polling.
  launched=$(setsid perl -e "$relay_wrapper" "$log" "$pidf" "$exitf" "$@" 3>&1 </dev/null >>"$log" 2>&1 &)
  case $launched in
    *[0-9]\ [0-9]*) wrapper=${launched%% *} pid=${launched#* } ;;
    *) echo "the job did not start (the wrapper failed); see $log" >&2; exit 95 ;;
  esac
else
  setsid sh -c '
    trap ":" HUP INT TERM
    ( eval "$job_env"; unset job_env pidf exitf record tpurun_reserved tpurun_me tpurun_since; exec 9<&-; exec setsid "$@" ) &
    job=$!
    echo "$job $job" > "$pidf.tmp$$" && mv -f "$pidf.tmp$$" "$pidf"
    while :; do
      wait "$job"; code=$?
      kill -0 "$job" 2>/dev/null || break
    done
    echo "$code" > "$exitf.tmp$$" && mv -f "$exitf.tmp$$" "$exitf"
    if [ -n "${record:-}" ] && read -r holder _ <"$record" 2>/dev/null && [ "$holder" = $$ ]; then rm -f "$record"; fi
  ' tpurun-wrapper "$@" </dev/null >>"$log" 2>&1 &
  wrapper=$!
  pid=
fi
if [ -n "${tpurun_reserved:-}" ]; then
  printf '%s %s %s %s\n' "$wrapper" "$run_id" "${tpurun_me:-$(id -un)}" "${tpurun_since:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}" \
    >"$record.tmp$$" && mv -f "$record.tmp$$" "$record"
fi
exec 9<&-
tries=0
while [ -z "$pid" ] && [ ! -s "$pidf" ]; do
  tries=$((tries + 1))
  if [ "$tries" -gt 200 ]; then echo "the job did not start within 20s; see $log" >&2; exit 95; fi
  sleep 0.1
done
[ -n "$pid" ] || read -r pid _ < "$pidf"
echo "TPURUN-LAUNCHED $pid"
)SH";

// The wrapper, where perl is (perl-base is Essential on Debian and Ubuntu):
// the job's output reaches the log through a pipe, and the wrapper fsyncs
// the log within a second of new output (at once when the job pauses). On
// NFS a writer's data otherwise stays in its client's cache until close,
// fsync or writeback (about 30 s), so lines would reach the dev VM late.
// Bytes pass verbatim (\r, long lines: the follower's rules apply). Once the
// job has exited and its output is drained (EOF, or 0.2 s quiet while a
// child of the job still holds the pipe), the exit record is written; such a
// child's later output is still relayed until it closes the pipe. Args:
// LOG PIDFILE EXITFILE COMMAND...; job_env (exported) is evaluated in the
// job's shell only.
constexpr const char* kRelayWrapper = R"PL(
use strict; use warnings; use POSIX (); use IO::Handle; use Fcntl qw(F_SETFD FD_CLOEXEC);
my ($log, $pidf, $exitf, @cmd) = @ARGV;
my $record = delete $ENV{record};
delete @ENV{qw(tpurun_reserved tpurun_me tpurun_since)};
my $reservation;
fcntl($reservation, F_SETFD, FD_CLOEXEC) if open($reservation, "<&=", 9);
$SIG{$_} = "IGNORE" for qw(HUP INT TERM PIPE);
sub put { my ($p, $t) = @_; my $tmp = "$p.tmp$$";
  if (open(my $f, ">", $tmp)) { print $f $t; return 1 if close($f) and rename($tmp, $p); }
  unlink($tmp); return 0; }
# The exit record's place is taken while the disk has room: a job that fills
# the logs disk still gets its exit record, written over the reserved bytes
# (no new block) and renamed into place.
my $reserved = "$exitf.pending";
if (open(my $rf, ">", $reserved)) { print $rf ("pending" . (" " x 57) . "\n"); close($rf) or unlink($reserved); }
sub put_exit { my ($t) = @_;
  if (open(my $f, "+<", $reserved)) {
    print $f $t; truncate($f, length($t));
    return if close($f) and rename($reserved, $exitf);
  }
  put($exitf, $t) and unlink($reserved); }
open(my $out, ">>", $log) or die "tpurun: cannot open $log: $!\n";
binmode $out;
pipe(my $r, my $w) or die "tpurun: pipe: $!\n";
my $job = fork;
die "tpurun: fork: $!\n" unless defined $job;
if ($job == 0) {
  $SIG{$_} = "DEFAULT" for qw(HUP INT TERM PIPE);
  close $r; close $out; POSIX::close(3);
  open(STDIN, "<", "/dev/null"); open(STDOUT, ">&", $w); open(STDERR, ">&", $w); close $w;
  { exec("sh", "-c", q{eval "$job_env"; unset job_env pidf exitf; exec setsid "$@"}, "tpurun-job", @cmd) }
  POSIX::_exit(127);
}
close $w;
put($pidf, "$job $job\n");
if (open(my $started, ">&=", 3)) { print $started "$$ $job\n"; close $started; }
my $rin = ""; vec($rin, fileno($r), 1) = 1;
my ($dirty, $synced, $code, $eof) = (0, time, undef, 0);
for (;;) {
  if (!defined $code and waitpid($job, POSIX::WNOHANG()) == $job) {
    $code = ($? & 127) ? 128 + ($? & 127) : $? >> 8;
  }
  my $n = select(my $ready = $rin, undef, undef, defined $code || $dirty ? 0.2 : 0.5);
  if ($n > 0) {
    my $got = sysread($r, my $buf, 65536);
    if ($got) { syswrite($out, $buf); $dirty = 1; } elsif (defined $got) { $eof = 1; }
  }
  if ($dirty and ($n <= 0 or time != $synced)) { $out->sync; $dirty = 0; $synced = time; }
  last if defined $code and ($eof or $n <= 0);
}
$out->sync;
put_exit("$code\n");
if ($record and open(my $rf, "<", $record)) {
  my ($holder) = split(" ", scalar(<$rf>) // "");
  close($rf);
  unlink($record) if $holder and $holder == $$;
}
while (!$eof) {
  my $got = sysread($r, my $buf, 65536);
  last unless $got;
  syswrite($out, $buf); $out->sync;
}
)PL";

std::string export_line(const std::string& key, const std::string& value) {
  return "export " + key + "=" + shell_quote(value) + "\n";
}

}  // namespace

RemoteCommand launch_command(const LaunchSpec& spec, const Worker& worker) {
  std::string job_env;
  job_env += export_line("TPURUN_RUN_ID", spec.run_id);
  job_env += export_line("TPURUN_LOG_DIR", spec.log_dir);
  job_env += export_line("TPURUN_WORKER", std::to_string(worker.index));
  job_env += export_line("TPURUN_NUM_WORKERS", std::to_string(spec.num_workers));
  job_env += export_line("TPURUN_STAGED_DIR", spec.staged_dir);
  job_env += export_line("TPURUN_ATTEMPT", std::to_string(spec.attempt));
  if (spec.slices && worker.slice >= 0) {
    for (const auto& [key, value] : slice_env(*spec.slices, worker)) job_env += export_line(key, value);
  }
  for (const auto& [key, value] : spec.env) job_env += export_line(key, value);

  std::ostringstream script;
  script << "set -u\n";
  script << "run_id=" << shell_quote(spec.run_id) << "\n";
  script << "logdir=" << shell_quote(spec.log_dir) << "\n";
  script << "snapshot=" << shell_quote(spec.staged_dir) << "\n";
  script << "worker=" << worker.index << "\n";
  script << "attempt=" << spec.attempt << " max_attempts=" << spec.max_attempts << "\n";
  script << "pidf=" << shell_quote(job_file(spec.log_dir, worker.index, spec.attempt, "pid")) << "\n";
  script << "exitf=" << shell_quote(job_file(spec.log_dir, worker.index, spec.attempt, "exit")) << "\n";
  script << "job_env=" << shell_quote(job_env) << "\n";
  script << "relay_wrapper=" << shell_quote(kRelayWrapper) << "\n";
  script << "set -- " << shell_join(spec.command) << "\n";
  script << kLauncherBody;
  return {"exec sh -s", script.str()};
}

std::optional<int> parse_launched_pid(const std::string& out) {
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    int pid = 0;
    if (std::sscanf(line.c_str(), "TPURUN-LAUNCHED %d", &pid) == 1 && pid > 0) return pid;
  }
  return std::nullopt;
}

}  // namespace tpurun

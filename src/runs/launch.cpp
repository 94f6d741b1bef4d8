#include "tpurun/launch.hpp"

#include <fmt/format.h>

#include <sstream>

#include "tpurun/shell_quote.hpp"

namespace tpurun {
namespace {

// Runs on the worker under `sh -s`. The variables and "$@" are set by the
// generated header. Layout of the processes it leaves behind:
//   wrapper  (setsid: own session, no TPURUN_* env, so `tpurun kill` spares it)
//     └ job  (setsid again: pid = pgid = sid; what `tpurun kill` signals)
// The wrapper waits for the job and records its exit code, even when the job
// is killed by a signal, so the log dir always says how each worker ended.
constexpr const char* kLauncherBody = R"SH(
log="$logdir/worker$worker.log"
pidf="$logdir/worker$worker.pid"
exitf="$logdir/worker$worker.exit"
if [ ! -d "$logdir" ]; then
  echo "log dir $logdir is not visible on this worker: is the shared (NFS) mount there?" >&2; exit 98
fi
if ! cd "$snapshot" 2>/dev/null; then
  echo "snapshot $snapshot is not visible on this worker: is the shared (NFS) mount there?" >&2; exit 97
fi
command -v setsid >/dev/null 2>&1 || { echo "setsid (util-linux) is missing on this worker" >&2; exit 96; }
export pidf exitf
setsid sh -c '
  trap ":" HUP INT TERM
  setsid env "$@" &
  job=$!
  echo "$job $job" > "$pidf.tmp" && mv "$pidf.tmp" "$pidf"
  while :; do
    wait "$job"; code=$?
    kill -0 "$job" 2>/dev/null || break
  done
  echo "$code" > "$exitf.tmp" && mv "$exitf.tmp" "$exitf"
' tpurun-wrapper "$@" </dev/null >>"$log" 2>&1 &
tries=0
while [ ! -s "$pidf" ]; do
  tries=$((tries + 1))
  if [ "$tries" -gt 200 ]; then echo "the job did not start within 20s; see $log" >&2; exit 95; fi
  sleep 0.1
done
read -r pid _ < "$pidf"
echo "TPURUN-LAUNCHED $pid"
)SH";

}  // namespace

RemoteCommand launch_command(const LaunchSpec& spec, const Worker& worker) {
  std::ostringstream script;
  script << "set -u\n";
  script << "logdir=" << shell_quote(spec.log_dir) << "\n";
  script << "snapshot=" << shell_quote(spec.staged_dir) << "\n";
  script << "worker=" << worker.index << "\n";
  // `env` assignments ahead of the command: only the job sees them.
  std::vector<std::string> args = {
      "TPURUN_RUN_ID=" + spec.run_id, "TPURUN_LOG_DIR=" + spec.log_dir,
      "TPURUN_WORKER=" + std::to_string(worker.index), "TPURUN_NUM_WORKERS=" + std::to_string(spec.num_workers),
      "TPURUN_STAGED_DIR=" + spec.staged_dir};
  for (const auto& [key, value] : spec.env) args.push_back(key + "=" + value);
  args.insert(args.end(), spec.command.begin(), spec.command.end());
  script << "set -- " << shell_join(args) << "\n";
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

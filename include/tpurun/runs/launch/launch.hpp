#pragma once
// Starting a job on a worker fully detached from the SSH session: its own
// session and process group, no stdin, output to the shared log dir, and a
// wrapper that records the job's pid and, when it ends, its exit code. The
// launchers above it: a stage's Reservations (runs/launch/reservation.hpp)
// and the watcher's relaunch (runs/launch/relaunch.hpp); it needs neither.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/pod/slices.hpp"
#include "tpurun/pod/worker.hpp"
#include "tpurun/transport/outcome.hpp"
#include "tpurun/transport/transport.hpp"
#include "tpurun/worker/tokens.hpp"

namespace tpurun {

struct LaunchSpec {
  std::string run_id;
  std::string log_dir;
  std::string staged_dir;
  std::vector<std::string> command;
  std::map<std::string, std::string> env;  // --env K=V, on top of the TPURUN_* variables
  int num_workers = 1;                     // TPURUN_NUM_WORKERS: the pod's worker count
  int attempt = 1;                         // TPURUN_ATTEMPT; picks the attempt's pid/exit files
  int max_attempts = 1;                    // > 1: each attempt starts with a header in the log
  std::optional<MultiSlice> slices;        // multi-slice runs: the MEGASCALE_* variables
  // Each worker's reservation lock (runs/launch/reservation.hpp); tests use their own.
  std::string reservation_lock = worker::kReservationLock;
};

// The script (worker/launch.sh, sent to `sh -s`) that launches the job on
// `worker` and prints worker::kLaunched and the job's pid once the job runs. It returns at once; closing the
// connection, Ctrl-C or a dropped link never stops the job.
RemoteCommand launch_command(const LaunchSpec& spec, const Worker& worker);
std::optional<int> parse_launched_pid(const std::string& out);

struct LaunchResult {
  std::vector<WorkerOutcome> outcomes;  // per worker; a launcher that ran but failed is an error
  std::map<int, int> pids;              // worker index -> job pid, for the workers where it started
  // Not every worker could be reserved, so nothing was launched: one line
  // per holder or failure ("w0-3: bob's run X (since ...)").
  std::vector<std::string> not_reserved;
};
// The launcher's answer on one worker into `result`: its pid, or why it did
// not start (a launcher that ran but failed says so on stderr).
void settle_launch(WorkerOutcome& launch, LaunchResult& result);

}  // namespace tpurun

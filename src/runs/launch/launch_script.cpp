// The launch of a job on a worker: worker/launch.sh (docs/protocols.md),
// sent to `sh -s` after a header that gives it the run's paths, the job's
// environment and the command.
#include <cstdio>
#include <sstream>

#include "runs/record/log_dir_layout.hpp"
#include "tpurun/runs/launch/launch.hpp"
#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/worker/programs.hpp"
#include "tpurun/worker/tokens.hpp"

namespace tpurun {
namespace {

std::string export_line(const std::string& key, const std::string& value) {
  return "export " + key + "=" + shell_quote(value) + "\n";
}

}  // namespace

RemoteCommand launch_command(const LaunchSpec& spec, const Worker& worker) {
  // The job's environment: export lines, evaluated in the job's shell only,
  // so the --env values are in no process's argv.
  std::string job_env;
  job_env += export_line(worker::kRunIdVariable, spec.run_id);
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
  script << "log=" << shell_quote(worker_log_path(spec.log_dir, worker.index)) << "\n";
  script << "snapshot=" << shell_quote(spec.staged_dir) << "\n";
  script << "worker=" << worker.index << "\n";
  script << "attempt=" << spec.attempt << " max_attempts=" << spec.max_attempts << "\n";
  script << "pidf=" << shell_quote(job_file(spec.log_dir, worker.index, spec.attempt, "pid")) << "\n";
  script << "exitf=" << shell_quote(job_file(spec.log_dir, worker.index, spec.attempt, "exit")) << "\n";
  script << "pendingf=" << shell_quote(job_file(spec.log_dir, worker.index, spec.attempt, "exit.pending")) << "\n";
  script << "job_env=" << shell_quote(job_env) << "\n";
  script << "set -- " << shell_join(spec.command) << "\n";
  script << worker::kLaunchSh;
  return {"exec sh -s", script.str()};
}

std::optional<int> parse_launched_pid(const std::string& out) {
  const std::string head = std::string(worker::kLaunched) + " ";
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.starts_with(head)) continue;
    int pid = 0;
    if (std::sscanf(line.c_str() + head.size(), "%d", &pid) == 1 && pid > 0) return pid;
  }
  return std::nullopt;
}

}  // namespace tpurun

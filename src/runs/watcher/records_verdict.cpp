#include "tpurun/runs/watcher/records_verdict.hpp"

#include <ctime>

#include "runs/watcher/gang.hpp"

namespace tpurun {

std::optional<RunState> verdict_from_records(const RunRecord& record, const RunState& last) {
  if (is_final(last.verdict)) return last;
  const int attempt = std::max(1, last.attempt);
  std::vector<WorkerSample> samples;
  for (const WorkerJob& job : read_worker_jobs(record.log_dir, record.workers, attempt)) {
    if (!job.exit_code) return std::nullopt;
    samples.push_back(WorkerSample{job.worker, job.pid, job.exit_code, Probe::none, "", job.exited_at,
                                   job.never_started});
  }
  GangPolicy policy = GangPolicy(record.gang);
  policy.max_attempts = std::max(1, last.max_attempts);
  GangMonitor gang(policy, worker_indices(record), attempt);
  const auto stop_at = stop_requested_at(record.log_dir);
  const auto now = std::chrono::system_clock::now();
  GangAction action = gang.observe(samples, now, stop_at.has_value(), stop_at);
  if (action == GangAction::stop_others) {
    gang.others_stopped();
    action = gang.observe({}, now, stop_at.has_value(), stop_at);
  }
  gang.give_up();  // a restart was due, but no watcher makes one
  RunState state = gang.state();
  state.preemptions = last.preemptions;
  state.watcher = last.watcher;
  state.message = "finished while no watcher ran: the verdict is the exit records'";
  state.updated_at = last.updated_at;
  return state;
}

bool run_is_active(const std::string& log_dir) {
  try {
    if (auto state = read_run_state(log_dir)) {
      if (is_final(state->verdict)) return false;
      if (watcher_alive(*state, static_cast<long long>(std::time(nullptr)))) return true;
      return !verdict_from_records(read_run_record(log_dir), *state);
    }
    RunRecord record = read_run_record(log_dir);
    for (const WorkerJob& job : read_worker_jobs(log_dir, record.workers, 1)) {
      if (job.state != JobState::exited) return true;
    }
    return false;
  } catch (const std::exception&) {
    return false;  // no run record: not a run
  }
}

}  // namespace tpurun

#include "tpurun/runs/watcher/records_verdict.hpp"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <thread>

#include "runs/watcher/gang.hpp"
#include "tpurun/util/duration.hpp"

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

std::map<std::string, std::vector<SnapshotUser>> snapshots_in_use(const std::string& logs_root,
                                                                 const std::string& user) {
  std::map<std::string, std::vector<SnapshotUser>> in_use;
  if (logs_root.empty()) return in_use;
  for (const std::string& dir : list_run_dirs(logs_root, user)) {
    if (!run_is_active(dir)) continue;
    std::string staged;
    try {
      staged = read_run_record(dir).staged_dir;
    } catch (const std::exception&) {
      continue;  // run_is_active said no record is no run
    }
    if (staged.empty()) continue;
    auto state = read_run_state(dir);
    in_use[std::filesystem::path(staged).filename().string()].push_back(
        {std::filesystem::path(dir).filename().string(), state ? to_string(state->verdict) : "running"});
  }
  return in_use;
}

std::vector<std::string> runs_copied_whole(const std::string& logs_root, const std::string& user) {
  std::vector<std::string> runs;
  if (logs_root.empty()) return runs;
  for (const std::string& dir : list_run_dirs(logs_root, user)) {
    if (run_is_active(dir)) continue;
    auto state = read_run_state(dir);
    if (!state || !state->logs_missing.empty()) continue;
    const std::filesystem::path path(dir);
    runs.push_back(path.parent_path().filename().string() + "/" + path.filename().string());
  }
  return runs;
}

std::string record_unwatched_stop(const std::string& run_dir, const CancelToken& cancel) {
  auto state = read_run_state(run_dir);
  if (!state || is_final(state->verdict) || watcher_alive(*state, static_cast<long long>(std::time(nullptr)))) {
    return "";
  }
  const RunRecord record = read_run_record(run_dir);
  for (int i = 0; i < 100 && !cancel.cancelled(); ++i) {
    if (auto settled = verdict_from_records(record, *state)) {
      settled->message = "stopped by tpurun kill while no watcher ran";
      settled->updated_at = format_utc_time(std::chrono::system_clock::now());
      write_run_state(run_dir, *settled);
      return fmt::format("run {} had no watcher: recorded as {}", record.run_id, to_string(settled->verdict));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return fmt::format("run {} has no watcher, and not every worker has an exit record yet: `tpurun runs` "
                     "gives its verdict once they do", record.run_id);
}

}  // namespace tpurun

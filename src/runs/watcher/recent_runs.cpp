#include "tpurun/runs/watcher/recent_runs.hpp"

#include <fmt/format.h>

#include <ctime>
#include <map>

#include "runs/watcher/liveness.hpp"
#include "tpurun/pod/config.hpp"
#include "tpurun/runs/watcher/records_verdict.hpp"

namespace tpurun {

std::vector<RunView> recent_runs(const std::string& logs_root, const std::string& user, int limit,
                                 const std::function<void(const std::string&)>& warn) {
  std::vector<RunView> runs;
  for (const std::string& dir : list_run_dirs(logs_root, user)) {
    if (static_cast<int>(runs.size()) >= limit) break;
    try {
      std::string problem;
      RunView view{read_run_record(dir), {}, read_run_state(dir, &problem), false, false};
      if (!problem.empty()) {
        warn(fmt::format("run {}: its state.json is {}; showing its job records instead", view.record.run_id,
                         problem));
      }
      if (view.state && !is_final(view.state->verdict)) view.watched = watcher_alive(*view.state, std::time(nullptr));
      // Unwatched and not final, or no state.json at all (its watcher never
      // wrote one): the exit records may settle it.
      if (!view.watched && !(view.state && is_final(view.state->verdict))) {
        if (auto settled = verdict_from_records(view.record, view.state.value_or(RunState{}))) {
          view.state = std::move(settled);
          view.from_records = true;
        }
      }
      for (const Worker& w : view.record.workers) view.jobs.push_back(read_worker_job(dir, w.index));
      runs.push_back(std::move(view));
    } catch (const std::exception& e) {
      warn(fmt::format("skipping {}: {}", dir, e.what()));
    }
  }
  return runs;
}

void check_liveness(std::vector<RunView>& runs, Context& ctx, int fanout,
                    const std::function<void(const std::string&)>& warn) {
  std::map<std::string, std::vector<RunView*>> by_pod;
  for (RunView& run : runs) {
    if (run.state) continue;  // the watcher keeps its state up to date
    for (const WorkerJob& job : run.jobs) {
      if (job.state == JobState::running) {
        by_pod[run.record.pod].push_back(&run);
        break;
      }
    }
  }
  for (auto& [pod_name, pod_runs] : by_pod) {
    std::optional<PodConfig> pod;
    try {
      PodRequest request = ctx.pod_request;
      request.pod = pod_name;
      pod = load_pod(request, ctx.env, ctx.processes);
    } catch (const std::exception& e) {
      // One line: the records still say what they know.
      warn(fmt::format("cannot check the jobs of {} run(s) on pod '{}': {}", pod_runs.size(), pod_name, e.what()));
    }
    PidsByWorker pids;
    for (RunView* run : pod_runs) {
      for (const WorkerJob& job : run->jobs) {
        if (job.state == JobState::running) pids[job.worker].push_back(*job.pid);
      }
    }
    std::map<int, std::map<int, bool>> alive;
    if (pod) alive = pids_alive(*ctx.make_transport(*pod), pod->workers, pids, fanout, ctx.cancel);
    for (RunView* run : pod_runs) {
      for (WorkerJob& job : run->jobs) {
        if (job.state != JobState::running) continue;
        auto row = alive.find(job.worker);
        if (row == alive.end() || !row->second.count(*job.pid)) {
          job.state = JobState::unknown;
        } else if (!row->second.at(*job.pid)) {
          // Re-read: the job may have ended between the two looks.
          job = read_worker_job(run->record.log_dir, job.worker);
          if (job.state == JobState::running) job.state = JobState::lost;
        }
      }
    }
  }
}

}  // namespace tpurun

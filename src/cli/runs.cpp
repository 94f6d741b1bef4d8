// tpurun runs: recent runs of this user, with every worker's job state.
#include "cli/runs.hpp"

#include <fmt/format.h>

#include <ctime>
#include <map>

#include "cli/help_texts.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/runs/watcher/liveness.hpp"
#include "tpurun/runs/watcher/records_verdict.hpp"
#include "tpurun/ui/report.hpp"
#include "tpurun/ui/runs_view.hpp"
#include "tpurun/util/identity.hpp"
#include "tpurun/util/usage_error.hpp"

namespace tpurun::cli {
namespace {

long long unix_now() { return static_cast<long long>(std::time(nullptr)); }

// Jobs with a pid and no exit record are "running" only if their worker says
// so: dead ones become "lost", unreachable or unknown pods "unknown".
void check_liveness(std::vector<RunView>& runs, Context& ctx, int fanout) {
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
      // One line: the records below still say what they know.
      fmt::print(ctx.err, "tpurun: cannot check the jobs of {} run(s) on pod '{}': {}\n", pod_runs.size(), pod_name,
                 e.what());
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

}  // namespace

CLI::App* register_runs(CLI::App& app, RunsOptions& o) {
  CLI::App* cmd = app.add_subcommand("runs", "List your recent runs and each worker's job state");
  cmd->add_option("-n,--limit", o.limit, "How many runs, newest first")->default_str("20");
  cmd->add_flag("--json", o.json, "Print the runs as JSON");
  cmd->add_flag("--no-check", o.no_check, "Read the log dirs only; don't ask the workers which jobs are alive");
  cmd->footer(help::kRuns);
  return cmd;
}

int run_runs(const RunsOptions& o, Context& ctx) {
  if (o.limit < 1) throw UsageError(fmt::format("-n {}: give how many runs to list, 1 or more", o.limit));
  PodConfig pod = load_pod_records(ctx);
  if (pod.logs_root.empty()) throw UsageError(fmt::format("pod '{}' has no logs_root; see docs/config.md", pod.name));
  std::vector<RunView> runs;
  for (const std::string& dir : list_run_dirs(pod.logs_root, local_user(ctx.env))) {
    if (static_cast<int>(runs.size()) >= o.limit) break;
    try {
      std::string problem;
      RunView view{read_run_record(dir), {}, read_run_state(dir, &problem), false, false};
      if (!problem.empty()) {
        fmt::print(ctx.err, "tpurun: run {}: its state.json is {}; showing its job records instead\n",
                   view.record.run_id, problem);
      }
      if (view.state && !is_final(view.state->verdict)) view.watched = watcher_alive(*view.state, unix_now());
      if (view.state && !is_final(view.state->verdict) && !view.watched) {
        if (auto settled = verdict_from_records(view.record, *view.state)) {
          view.state = std::move(settled);
          view.from_records = true;
        }
      }
      for (const Worker& w : view.record.workers) view.jobs.push_back(read_worker_job(dir, w.index));
      runs.push_back(std::move(view));
    } catch (const std::exception& e) {
      fmt::print(ctx.err, "tpurun: skipping {}: {}\n", dir, e.what());
    }
  }
  if (!o.no_check) check_liveness(runs, ctx, 64);

  if (o.json) {
    nlohmann::json doc = nlohmann::json::array();
    for (const RunView& run : runs) {
      doc.push_back(run_to_json(run));
    }
    print_json(ctx.out, {{"runs", doc}});
    return 0;
  }
  if (runs.empty()) {
    fmt::print(ctx.out, "no runs yet under {}/{}\n", pod.logs_root, local_user(ctx.env));
    return 0;
  }
  print_runs_table(ctx.out, runs);
  return 0;
}

}  // namespace tpurun::cli

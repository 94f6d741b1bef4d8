// tpurun runs: recent runs of this user, with every worker's job state.
#include "cli/runs.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <ctime>
#include <map>

#include "runs/preemption_json.hpp"
#include "util/identity.hpp"
#include "ui/report.hpp"
#include "tpurun/duration.hpp"
#include "tpurun/follow.hpp"
#include "tpurun/run_record.hpp"
#include "tpurun/run_state.hpp"
#include "tpurun/worker_select.hpp"

namespace tpurun::cli {
namespace {

struct RunView {
  RunRecord record;
  std::vector<WorkerJob> jobs;     // runs made before the watcher existed
  std::optional<RunState> state;   // the watcher's view: one verdict, a state per worker
  bool watched = false;
};

long long unix_now() { return static_cast<long long>(std::time(nullptr)); }

// "failed: w3 exited 3 first", "running (attempt 2 of 3)", "running, unwatched".
std::string verdict_text(const RunView& run) {
  const RunState& s = *run.state;
  std::string text = to_string(s.verdict);
  if (s.first_failure && (s.verdict == RunVerdict::failed || s.verdict == RunVerdict::lost ||
                          s.verdict == RunVerdict::restarting)) {
    if (s.first_failure->how == "stalled") {
      text += ": " + s.first_failure->detail;
    } else {
      text += fmt::format(": {} {} first", worker_name(run.record.workers, s.first_failure->worker),
                          s.first_failure->how == "lost" ? "lost" : s.first_failure->detail);
    }
  }
  if (!s.stalled_since.empty() && s.verdict == RunVerdict::running) {
    text += fmt::format(", stalled since {} (0% duty cycle, no new log line; on stall: {})", s.stalled_since,
                        run.record.on_stall);
  }
  if (s.verdict == RunVerdict::preempted && !s.preemptions.empty()) text += ": " + s.preemptions.back().detail;
  if (s.max_attempts > 1) text += fmt::format(" (attempt {} of {})", s.attempt, s.max_attempts);
  if (!is_final(s.verdict) && !run.watched) text += ", UNWATCHED (tpurun logs RUN -f watches again)";
  return text;
}

// "preempted 2026-..Z: TPU VM rc PREEMPTED (attempt 1); recreated (id 1 → 2),
// down 41s, resumed as attempt 2", or "...; not recreated: why".
std::string preemption_text(const Preemption& p) {
  std::string text = fmt::format("{} {}: TPU VM {} {} (attempt {})", p.state == "NOT_FOUND" ? "deleted" : "preempted",
                                 p.at, p.tpu, p.state == "NOT_FOUND" ? "gone" : p.state, p.attempt);
  if (p.recreated()) {
    text += fmt::format("; recreated (id {} → {})", p.node_id.empty() ? "-" : p.node_id, p.new_id);
    if (p.resumed_attempt > 0) {
      text += fmt::format(", down {}, resumed as attempt {}", format_age(static_cast<long long>(p.down_s + 0.5)),
                          p.resumed_attempt);
    }
  } else if (!p.why.empty()) {
    text += "; not recreated: " + p.why;
  }
  return text;
}

std::string job_label(const WorkerJob& job) {
  if (job.state == JobState::exited) return fmt::format("exited({})", *job.exit_code);
  return to_string(job.state);
}

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

std::string summarize(const std::vector<WorkerJob>& jobs) {
  std::map<std::string, int> counts;
  for (const WorkerJob& job : jobs) ++counts[job_label(job)];
  std::vector<std::string> parts;
  for (const auto& [label, n] : counts) parts.push_back(fmt::format("{} {}", n, label));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string summarize_states(const RunState& s) {
  std::map<std::string, int> counts;
  for (const WorkerStatus& w : s.workers) ++counts[to_string(w.state)];
  std::vector<std::string> parts;
  for (const auto& [label, n] : counts) parts.push_back(fmt::format("{} {}", n, label));
  return fmt::format("{}", fmt::join(parts, ", "));
}

nlohmann::json opt_int(const std::optional<int>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

// Multi-slice runs: which slice a worker (global index) is in.
nlohmann::json& with_slice(nlohmann::json& j, const RunRecord& record, int index) {
  for (const Worker& w : record.workers) {
    if (w.index == index && w.slice >= 0) j.update({{"slice", w.slice}, {"slice_worker", w.slice_worker}});
  }
  return j;
}

nlohmann::json run_to_json(const RunView& run) {
  nlohmann::json workers = nlohmann::json::array();
  nlohmann::json doc{{"run_id", run.record.run_id}, {"pod", run.record.pod}, {"created_at", run.record.created_at},
                     {"command", run.record.command}, {"log_dir", run.record.log_dir},
                     {"staged_dir", run.record.staged_dir}};
  if (run.record.megascale) doc["slices"] = run.record.slices;
  if (!run.state) {
    for (const WorkerJob& job : run.jobs) {
      nlohmann::json j{{"worker", job.worker}, {"state", to_string(job.state)}, {"pid", opt_int(job.pid)},
                       {"exit_code", opt_int(job.exit_code)}};
      workers.push_back(with_slice(j, run.record, job.worker));
    }
    doc["verdict"] = nullptr;
    doc["workers"] = workers;
    return doc;
  }
  const RunState& s = *run.state;
  for (const WorkerStatus& w : s.workers) {
    nlohmann::json j{{"worker", w.worker}, {"state", to_string(w.state)}, {"pid", opt_int(w.pid)},
                     {"exit_code", opt_int(w.exit_code)}, {"detail", w.detail}};
    workers.push_back(with_slice(j, run.record, w.worker));
  }
  doc["verdict"] = to_string(s.verdict);
  doc["attempt"] = s.attempt;
  doc["max_attempts"] = s.max_attempts;
  doc["watched"] = run.watched;
  doc["stopped_others"] = s.stopped_others;
  doc["first_failure"] = nullptr;
  if (s.first_failure) {
    const GangFailure& f = *s.first_failure;
    nlohmann::json j{{"worker", f.worker}, {"how", f.how}, {"exit_code", f.exit_code},
                     {"signal", f.signal}, {"since", f.since}, {"detail", f.detail}};
    doc["first_failure"] = with_slice(j, run.record, f.worker);
  }
  doc["message"] = s.message;
  doc["stalled_since"] = s.stalled_since.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.stalled_since);
  doc["preemptions"] = nlohmann::json::array();
  for (const Preemption& p : s.preemptions) doc["preemptions"].push_back(preemption_to_json(p));
  doc["workers"] = workers;
  return doc;
}

}  // namespace

CLI::App* register_runs(CLI::App& app, RunsOptions& o) {
  CLI::App* cmd = app.add_subcommand("runs", "List your recent runs and each worker's job state");
  cmd->add_option("-n,--limit", o.limit, "How many runs, newest first")->default_str("20");
  cmd->add_flag("--json", o.json, "Print the runs as JSON");
  cmd->add_flag("--no-check", o.no_check, "Read the log dirs only; don't ask the workers which jobs are alive");
  cmd->footer(R"(Each run has one verdict, kept by its watcher: running, restarting, succeeded,
failed (names the first failing worker), lost (a worker was lost first), or
stopped (tpurun kill). Each worker: pending, running, succeeded, failed, lost,
stopped (by tpurun, after another worker failed, or by kill) or restarting.
A running run whose every worker has been at 0% duty cycle with no new log
line for its --stall-after is "stalled since TIME" (stage --on-stall).
UNWATCHED: the run's watcher is gone (killed, or its host restarted) while the
run may still be going; `tpurun logs RUN -f` starts a new one.
Runs made by older tpurun versions show exited(CODE), lost or unknown per worker.)");
  return cmd;
}

int run_runs(const RunsOptions& o, Context& ctx) {
  PodConfig pod = load_pod_records(ctx);
  if (pod.logs_root.empty()) throw UsageError(fmt::format("pod '{}' has no logs_root; see docs/config.md", pod.name));
  std::vector<RunView> runs;
  for (const std::string& dir : list_run_dirs(pod.logs_root, local_user(ctx.env))) {
    if (static_cast<int>(runs.size()) >= o.limit) break;
    try {
      RunView view{read_run_record(dir), {}, read_run_state(dir), false};
      if (view.state && !is_final(view.state->verdict)) view.watched = supervisor_alive(*view.state, unix_now());
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
  fmt::print(ctx.out, "{:<44} {:<20} {:<30} {}\n", "RUN", "CREATED", "COMMAND", "WORKERS");
  for (const RunView& run : runs) {
    std::string command = fmt::format("{}", fmt::join(run.record.command, " "));
    if (command.size() > 30) command = command.substr(0, 27) + "...";
    fmt::print(ctx.out, "{:<44} {:<20} {:<30} {}\n", run.record.run_id, run.record.created_at, command,
               run.state ? verdict_text(run) + " — " + summarize_states(*run.state) : summarize(run.jobs));
    if (run.state) {
      for (const Preemption& p : run.state->preemptions) fmt::print(ctx.out, "  {}\n", preemption_text(p));
    }
  }
  return 0;
}

}  // namespace tpurun::cli

#include "tpurun/ui/runs_view.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "tpurun/pod/worker_select.hpp"
#include "tpurun/runs/record/preemption_json.hpp"
#include "tpurun/util/duration.hpp"

namespace tpurun {
namespace {

std::string job_label(const WorkerJob& job) {
  if (job.state == JobState::exited) return fmt::format("exited({})", *job.exit_code);
  return to_string(job.state);
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

}  // namespace

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
  doc["from_records"] = run.from_records;
  doc["stopped_others"] = s.stopped_others;
  doc["first_failure"] = nullptr;
  if (s.first_failure) {
    const GangFailure& f = *s.first_failure;
    nlohmann::json j{{"worker", f.worker}, {"how", f.how}, {"exit_code", f.exit_code},
                     {"signal", f.signal}, {"since", f.since}, {"detail", f.detail}};
    if (!f.stacks.empty()) j["stacks"] = f.stacks;
    doc["first_failure"] = with_slice(j, run.record, f.worker);
  }
  doc["message"] = s.message;
  doc["stalled_since"] = s.stalled_since.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.stalled_since);
  doc["preemptions"] = nlohmann::json::array();
  for (const Preemption& p : s.preemptions) doc["preemptions"].push_back(preemption_to_json(p));
  doc["logs_missing"] = nlohmann::json::array();
  for (const MissingLogs& m : s.logs_missing) {
    doc["logs_missing"].push_back({{"worker", m.worker}, {"host", m.host}, {"path", m.path}, {"why", m.why}});
  }
  doc["workers"] = workers;
  return doc;
}

void print_runs_table(std::FILE* out, const std::vector<RunView>& runs) {
  fmt::print(out, "{:<44} {:<20} {:<30} {}\n", "RUN", "CREATED", "COMMAND", "WORKERS");
  for (const RunView& run : runs) {
    std::string command = fmt::format("{}", fmt::join(run.record.command, " "));
    if (command.size() > 30) command = command.substr(0, 27) + "...";
    fmt::print(out, "{:<44} {:<20} {:<30} {}\n", run.record.run_id, run.record.created_at, command,
               run.state ? verdict_text(run) + " — " + summarize_states(*run.state) : summarize(run.jobs));
    if (run.state) {
      for (const Preemption& p : run.state->preemptions) fmt::print(out, "  {}\n", preemption_text(p));
      for (const MissingLogs& m : run.state->logs_missing) fmt::print(out, "  {}\n", missing_logs_text(m));
    }
  }
}

// "failed: w3 exited 3 first", "running (attempt 2 of 3)", "running, unwatched".
std::string verdict_text(const RunView& run) {
  const RunState& s = *run.state;
  std::string text = to_string(s.verdict);
  if (s.first_failure && (s.verdict == RunVerdict::failed || s.verdict == RunVerdict::lost ||
                          s.verdict == RunVerdict::restarting)) {
    if (s.first_failure->how == "stalled" || s.first_failure->how == "out_of_space") {
      text += ": " + s.first_failure->detail;
    } else {
      text += fmt::format(": {} {} first", worker_name(run.record.workers, s.first_failure->worker),
                          s.first_failure->how == "lost" ? "lost" : s.first_failure->detail);
    }
  }
  if (!s.stalled_since.empty() && s.verdict == RunVerdict::running) {
    text += fmt::format(", stalled since {} (0% duty cycle, no new log line; on stall: {})", s.stalled_since,
                        run.record.gang.on_stall);
  }
  if (s.first_failure && !s.first_failure->stacks.empty() && is_final(s.verdict)) {
    text += "; " + s.first_failure->stacks;
  }
  if (s.verdict == RunVerdict::preempted && !s.preemptions.empty()) text += ": " + s.preemptions.back().detail;
  if (s.max_attempts > 1) text += fmt::format(" (attempt {} of {})", s.attempt, s.max_attempts);
  if (!is_final(s.verdict) && !run.watched) text += ", UNWATCHED (tpurun logs RUN -f watches again)";
  if (run.from_records) text += " (finished, not watched: from the exit records)";
  return text;
}

// "preempted 2026-..Z: TPU VM rc PREEMPTED (attempt 1); recreated (id 1 → 2),
// down 41s, resumed as attempt 2", or "...; not recreated: why".
std::string preemption_text(const Preemption& p) {
  std::string text = fmt::format("{} {}: TPU VM {} {} (attempt {})", p.state == "NOT_FOUND" ? "deleted" : "preempted",
                                 p.at, p.tpu, p.state == "NOT_FOUND" ? "gone" : p.state, p.attempt);
  if (p.recreated()) {
    text += p.node_id.empty() ? fmt::format("; recreated (new id {})", p.new_id)
                              : fmt::format("; recreated (id {} → {})", p.node_id, p.new_id);
    if (p.resumed_attempt > 0) {
      text += fmt::format(", down {}, resumed as attempt {}", format_age(static_cast<long long>(p.down_s + 0.5)),
                          p.resumed_attempt);
    }
  } else if (!p.why.empty()) {
    text += "; not recreated: " + p.why;
  }
  return text;
}


}  // namespace tpurun

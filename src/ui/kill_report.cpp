#include "tpurun/ui/kill_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "tpurun/ui/report.hpp"
#include "tpurun/ui/status_table.hpp"
#include "tpurun/ui/tpu_view.hpp"
#include "tpurun/util/duration.hpp"

namespace tpurun {
namespace {

constexpr size_t kCommandWidth = 64;

std::string victim_line(const Victim& v) {
  const ScannedProcess& p = v.process;
  return fmt::format("  {:<8} {:>7}  {:>6}  {}  ({})", p.user.empty() ? std::to_string(p.uid) : p.user, p.pid,
                     format_age(p.elapsed_s), truncate_text(p.command, kCommandWidth), v.reason);
}

std::string pid_list(const std::vector<int>& pids) { return fmt::format("{}", fmt::join(pids, " ")); }

std::string plural(size_t n, const char* word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "es"); }

std::vector<std::string> worker_lines(const WorkerKill& r, const KillRequest& request) {
  std::vector<std::string> lines;
  const bool list_victims = request.dry_run || request.options.force;
  if (!r.plan.victims.empty()) {
    if (request.dry_run) {
      lines.push_back(
          fmt::format("would send SIGTERM, then SIGKILL after {:g}s, to {}{}:", request.grace_ms / 1000.0,
                      plural(r.plan.victims.size(), "process"),
                      r.plan.groups.empty() ? "" : fmt::format(" (groups {})", pid_list(r.plan.groups))));
    } else if (r.signalled) {
      lines.push_back(fmt::format(
          "signalled {}: {} exited after SIGTERM, {} needed SIGKILL{}",
          plural(r.plan.victims.size(), "process"), r.gone_term.size() + r.gone_before.size(),
          r.gone_kill.size(), r.survivors.empty() ? "" : fmt::format(", {} SURVIVED", r.survivors.size())));
    }
    if (list_victims) {
      for (const Victim& v : r.plan.victims) lines.push_back(victim_line(v));
    } else if (r.signalled) {
      std::vector<int> pids;
      for (const Victim& v : r.plan.victims) pids.push_back(v.process.pid);
      lines.push_back("  pids: " + pid_list(pids));
    }
  }
  if (!r.survivors.empty()) lines.push_back("still alive after SIGKILL: " + pid_list(r.survivors));
  for (const std::string& s : r.skipped) lines.push_back("not signalled: pid " + s);
  if (request.dry_run) {
    if (r.cleanup.remove_lockfile) lines.push_back(fmt::format("would remove {}", kLibtpuLockfile));
    if (r.cleanup.remove_tpu_logs) lines.push_back(fmt::format("would remove {}", kTpuLogsDir));
  }
  for (const std::string& path : r.cleaned.removed) lines.push_back("removed " + path);
  for (const std::string& kept : r.cleaned.kept) lines.push_back("kept " + kept);
  for (const HolderJob& job : holder_jobs(r.plan.spared)) {
    lines.push_back("not yours, not signalled: " + job_text(job, kCommandWidth));
  }
  for (const HolderJob& job : holder_jobs(r.plan.kept_own)) {
    lines.push_back(fmt::format("yours but not in run {}, not signalled: {}",
                                request.options.run_id.value_or("?"), job_text(job, kCommandWidth)));
  }
  if (!r.error.empty() && r.state != TpuState::unreachable) lines.push_back("error: " + r.error);
  return lines;
}

nlohmann::json processes_json(const std::vector<ScannedProcess>& ps) {
  nlohmann::json a = nlohmann::json::array();
  for (const ScannedProcess& p : ps) a.push_back(process_to_json(p));
  return a;
}

}  // namespace

std::string format_kill_report(const std::vector<WorkerKill>& reports, const KillRequest& request,
                               bool color) {
  std::string text;
  if (request.dry_run) text += "dry run: nothing is signalled or removed.\n";
  std::vector<WorkerScanResult> finals;
  for (const WorkerKill& r : reports) {
    for (const std::string& line : worker_lines(r, request)) {
      text += fmt::format("[{}] {}\n", r.worker.display(), line);
    }
    std::optional<LockScan> shown = r.after ? r.after : r.before;
    finals.push_back({r.worker, r.state, shown, r.error});
  }
  text += request.dry_run ? "Expected result:\n" : "Result:\n";
  text += format_state_rows(finals, color);
  bool spared =
      std::any_of(reports.begin(), reports.end(), [](const WorkerKill& r) { return !r.plan.spared.empty(); });
  if (spared && !request.options.force) {
    text +=
        "Other users' processes are never signalled: ask them to stop their job, or an admin\n"
        "(tpurun kill --force --yes, recorded in the audit log).\n";
  }
  return text;
}

nlohmann::json kill_report_to_json(const WorkerKill& r, bool dry_run) {
  nlohmann::json victims = nlohmann::json::array();
  for (const Victim& v : r.plan.victims) {
    nlohmann::json j = process_to_json(v.process);
    j["reason"] = v.reason;
    victims.push_back(j);
  }
  nlohmann::json j = worker_json(r.worker);
  j.update({{"state", to_string(r.state)},
            {"victims", victims},
            {"groups", r.plan.groups},
            {"signalled", r.signalled},
            {"gone_before", r.gone_before},
            {"gone_term", r.gone_term},
            {"gone_kill", r.gone_kill},
            {"survivors", r.survivors},
            {"skipped", r.skipped},
            {"not_signalled", processes_json(r.plan.spared)},
            {"kept_own", processes_json(r.plan.kept_own)},
            {"removed", r.cleaned.removed},
            {"kept", r.cleaned.kept}});
  nlohmann::json would = nlohmann::json::array();
  if (dry_run && r.cleanup.remove_lockfile) would.push_back(kLibtpuLockfile);
  if (dry_run && r.cleanup.remove_tpu_logs) would.push_back(kTpuLogsDir);
  j["would_remove"] = would;
  j["holders_after"] = r.after ? processes_json(tpu_users(*r.after)) : nlohmann::json(nullptr);
  j["error"] = r.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.error);
  return j;
}

int kill_exit_code(const std::vector<WorkerKill>& reports, bool dry_run) {
  std::vector<TpuState> states;
  for (const WorkerKill& r : reports) {
    // A dry run only fails when it could not look.
    bool failed = r.state == TpuState::unreachable || r.state == TpuState::error || !r.error.empty();
    states.push_back(dry_run ? (failed ? TpuState::error : TpuState::free) : r.state);
    if (!dry_run && !r.error.empty() && is_free(r.state)) states.back() = TpuState::partial;
  }
  return tpu_exit_code(states);
}

}  // namespace tpurun

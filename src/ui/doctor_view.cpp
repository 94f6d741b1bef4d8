// tpurun doctor's lines and JSON (doctor_view.hpp).
#include "tpurun/ui/doctor_view.hpp"

#include <fmt/format.h>

#include <map>

#include "tpurun/fanout/gather.hpp"
#include "tpurun/util/duration.hpp"

namespace tpurun {
namespace {

const char* severity_name(Finding::Severity s) { return s == Finding::Severity::error ? "error" : "warning"; }

std::string where(const Finding& f) { return f.workers.empty() ? "here" : compact_worker_set(f.workers); }

// "disk: w0-3 hold 40.2 MiB of snapshots and 1.1 MiB of run logs (tpurun gc
// removes old ones)", one line per distinct pair of figures.
std::string disk_use_lines(const std::vector<WorkerFacts>& facts) {
  std::map<std::string, std::vector<int>> by_text;
  for (const WorkerFacts& w : facts) {
    if (w.local_staging_kib < 0) continue;
    by_text[fmt::format("{} of snapshots and {} of run logs",
                        human_size(static_cast<std::uint64_t>(w.local_staging_kib) * 1024),
                        human_size(static_cast<std::uint64_t>(w.local_logs_kib) * 1024))]
        .push_back(w.worker.index);
  }
  std::string text;
  for (const auto& [what, workers] : by_text) {
    text += fmt::format("disk    {} hold{} {} (tpurun gc removes old ones)\n", compact_worker_set(workers),
                        workers.size() == 1 ? "s" : "", what);
  }
  return text;
}

}  // namespace

size_t error_count(const std::vector<Finding>& findings) {
  size_t errors = 0;
  for (const Finding& f : findings) errors += f.severity == Finding::Severity::error ? 1 : 0;
  return errors;
}

std::string format_findings(const std::vector<Finding>& findings) {
  std::string text;
  for (const Finding& f : findings) {
    text += fmt::format("{:<7} {}: {}\n", severity_name(f.severity), where(f), f.problem);
    if (!f.fix.empty()) {
      std::string fix = f.fix;
      for (size_t at = fix.find('\n'); at != std::string::npos; at = fix.find('\n', at + 1)) fix.insert(at + 1, "        ");
      text += fmt::format("        fix: {}\n", fix);
    }
  }
  return text;
}

std::string format_doctor_report(const std::string& pod, size_t workers, const std::vector<Finding>& findings,
                                 const std::vector<WorkerFacts>& facts) {
  const size_t errors = error_count(findings);
  const size_t warnings = findings.size() - errors;
  return fmt::format("doctor: pod '{}', {} worker{}\n", pod, workers, workers == 1 ? "" : "s") +
         format_findings(findings) + disk_use_lines(facts) +
         (findings.empty() ? "no problems found: reach, uid, mount, sudo, devices, tpu, clock, tmp and versions "
                             "are fine on every worker\n"
                           : fmt::format("{} error{}, {} warning{}\n", errors, errors == 1 ? "" : "s", warnings,
                                         warnings == 1 ? "" : "s"));
}

nlohmann::json findings_to_json(const std::string& pod, size_t workers, const std::vector<Finding>& findings,
                                const std::vector<WorkerFacts>& facts) {
  nlohmann::json problems = nlohmann::json::array();
  for (const Finding& f : findings) {
    problems.push_back({{"severity", severity_name(f.severity)},
                        {"check", f.check},
                        {"workers", f.workers},
                        {"problem", f.problem},
                        {"fix", f.fix}});
  }
  nlohmann::json doc = {{"pod", pod}, {"workers", workers}, {"ok", error_count(findings) == 0}, {"problems", problems}};
  nlohmann::json disk = nlohmann::json::array();
  for (const WorkerFacts& w : facts) {
    if (w.local_staging_kib >= 0) {
      disk.push_back({{"worker", w.worker.index}, {"staging_kib", w.local_staging_kib}, {"logs_kib", w.local_logs_kib}});
    }
  }
  if (!disk.empty()) doc["disk"] = disk;
  return doc;
}

}  // namespace tpurun

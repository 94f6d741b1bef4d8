// tpurun gc's lines and JSON (gc_view.hpp).
#include "tpurun/ui/gc_view.hpp"

#include <fmt/format.h>

namespace tpurun {
namespace {

std::string kept_text(const KeptSnapshot& kept) {
  if (kept.runs.empty()) return fmt::format("kept {}: a stage is sending or launching it now", kept.name);
  std::string runs;
  for (const SnapshotUser& run : kept.runs) {
    runs += fmt::format("{}run {} ({})", runs.empty() ? "" : ", ", run.run_id, run.state);
  }
  return fmt::format("kept {}: used by {}", kept.name, runs);
}

}  // namespace

void print_gc_report(std::FILE* out, std::FILE* err, const GcReport& report, const WorkerGcReports& on_workers,
                     bool dry_run) {
  const char* verb = dry_run ? "would remove" : "removed";
  for (const std::string& dir : report.snapshots_removed) fmt::print(out, "{} {}\n", verb, dir);
  for (const KeptSnapshot& k : report.kept) fmt::print(out, "{}\n", kept_text(k));
  fmt::print(out, "{} {} snapshots and {} unused objects ({:.1f} MiB)\n", verb, report.snapshots_removed.size(),
             report.objects_removed, report.bytes_freed / 1048576.0);
  for (const std::string& error : report.errors) fmt::print(err, "tpurun: {}\n", error);
  for (const auto& [worker, r] : on_workers) {
    if (!r.error.empty()) {
      fmt::print(err, "[{}] gc failed: {}\n", worker.display(), r.error);
      continue;
    }
    fmt::print(out, "[{}] {} {} snapshots and {} unused objects ({:.1f} MiB), {} old run log dirs ({:.1f} MiB)\n",
               worker.display(), verb, r.snapshots_removed.size(), r.objects_removed, r.bytes_freed / 1048576.0,
               r.runs_removed.size(), r.run_bytes_freed / 1048576.0);
  }
}

nlohmann::json gc_report_to_json(const GcReport& report, const WorkerGcReports& on_workers, bool dry_run) {
  nlohmann::json kept = nlohmann::json::array();
  for (const KeptSnapshot& k : report.kept) {
    nlohmann::json runs = nlohmann::json::array();
    for (const SnapshotUser& run : k.runs) runs.push_back({{"run_id", run.run_id}, {"state", run.state}});
    kept.push_back({{"snapshot", k.name}, {"runs", runs}, {"being_staged", k.runs.empty()}});
  }
  nlohmann::json workers = nlohmann::json::array();
  for (const auto& [worker, r] : on_workers) {
    workers.push_back({{"worker", worker.index}, {"host", worker.host}, {"snapshots_removed", r.snapshots_removed},
                       {"objects_removed", r.objects_removed}, {"bytes_freed", r.bytes_freed},
                       {"runs_removed", r.runs_removed}, {"run_bytes_freed", r.run_bytes_freed}, {"error", r.error}});
  }
  return {{"dry_run", dry_run},
          {"snapshots_removed", report.snapshots_removed},
          {"kept", kept},
          {"temps_removed", report.temps_removed},
          {"objects_removed", report.objects_removed},
          {"bytes_freed", report.bytes_freed},
          {"errors", report.errors},
          {"workers", workers}};
}

}  // namespace tpurun

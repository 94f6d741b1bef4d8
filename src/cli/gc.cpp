// tpurun gc: remove your old snapshots and the stored contents nothing uses.
#include "cli/gc.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "cli/help_texts.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/runs/watcher/records_verdict.hpp"
#include "tpurun/fanout/fanout.hpp"
#include "tpurun/staging/gc.hpp"
#include "tpurun/staging/worker_gc.hpp"
#include "tpurun/ui/report.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/identity.hpp"

namespace tpurun::cli {
namespace {

// No shared mount: the same gc on every worker's own copies, at once.
std::vector<std::pair<Worker, WorkerGcReport>> gc_on_workers(const std::string& staging_root, const GcRequest& request,
                                                             Context& ctx) {
  const Target target = select_workers(load_pod(ctx.pod_request, ctx.env, ctx.processes), "all");
  auto transport = ctx.make_transport(target.pod);
  std::vector<std::pair<Worker, WorkerGcReport>> out(target.workers.size());
  run_parallel(target.workers.size(), 64, [&](size_t i) {
    out[i].first = target.workers[i];
    auto connection = transport->connect(target.workers[i], ctx.cancel);
    if (!connection) {
      out[i].second.error = connection.error().message;
      return;
    }
    out[i].second = collect_garbage_on(**connection, staging_root, request, ctx.cancel);
  });
  return out;
}

nlohmann::json workers_json(const std::vector<std::pair<Worker, WorkerGcReport>>& on_workers) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [worker, r] : on_workers) {
    out.push_back({{"worker", worker.index}, {"host", worker.host}, {"snapshots_removed", r.snapshots_removed},
                   {"objects_removed", r.objects_removed}, {"bytes_freed", r.bytes_freed}, {"error", r.error}});
  }
  return out;
}

std::string kept_text(const KeptSnapshot& kept) {
  std::string runs;
  for (const SnapshotUser& run : kept.runs) {
    runs += fmt::format("{}run {} ({})", runs.empty() ? "" : ", ", run.run_id, run.state);
  }
  return fmt::format("kept {}: used by {}", kept.name, runs);
}

}  // namespace

CLI::App* register_gc(CLI::App& app, GcOptions& o) {
  CLI::App* cmd = app.add_subcommand("gc", "Remove your snapshots older than a cutoff, and unused objects");
  cmd->add_option("--older-than", o.older_than, "Age cutoff, e.g. 14d, 36h")->default_str("14d");
  cmd->add_flag("--dry-run", o.dry_run, "List what would be removed; remove nothing");
  cmd->add_flag("--json", o.json, "Print the report as JSON");
  cmd->footer(help::kGc);
  return cmd;
}

int run_gc(const GcOptions& o, Context& ctx) {
  PodConfig pod = load_pod_records(ctx);
  if (pod.staging_root.empty()) {
    throw UsageError(fmt::format("pod '{}' has no staging_root; see docs/config.md", pod.name));
  }
  GcRequest request;
  request.staging_root = pod.staging_root;
  request.user = local_user(ctx.env);
  request.older_than = std::chrono::duration_cast<std::chrono::seconds>(parse_duration(o.older_than));
  request.now = std::chrono::system_clock::now();
  request.dry_run = o.dry_run;
  request.in_use = snapshots_in_use(pod.logs_root, request.user);
  GcReport report = collect_garbage(request);
  if (!report.refused.empty()) throw std::runtime_error(report.refused);
  std::vector<std::pair<Worker, WorkerGcReport>> on_workers;
  if (!pod.shared_mount) on_workers = gc_on_workers(pod.worker_root + "/staging", request, ctx);

  if (o.json) {
    nlohmann::json kept = nlohmann::json::array();
    for (const KeptSnapshot& k : report.kept) {
      nlohmann::json runs = nlohmann::json::array();
      for (const SnapshotUser& run : k.runs) runs.push_back({{"run_id", run.run_id}, {"state", run.state}});
      kept.push_back({{"snapshot", k.name}, {"runs", runs}});
    }
    print_json(ctx.out, {{"dry_run", o.dry_run},
                         {"snapshots_removed", report.snapshots_removed},
                         {"kept", kept},
                         {"temps_removed", report.temps_removed},
                         {"objects_removed", report.objects_removed},
                         {"bytes_freed", report.bytes_freed},
                         {"errors", report.errors},
                         {"workers", workers_json(on_workers)}});
  } else {
    const char* verb = o.dry_run ? "would remove" : "removed";
    for (const std::string& dir : report.snapshots_removed) fmt::print(ctx.out, "{} {}\n", verb, dir);
    for (const KeptSnapshot& k : report.kept) fmt::print(ctx.out, "{}\n", kept_text(k));
    fmt::print(ctx.out, "{} {} snapshots and {} unused objects ({:.1f} MiB)\n", verb,
               report.snapshots_removed.size(), report.objects_removed, report.bytes_freed / 1048576.0);
    for (const std::string& error : report.errors) fmt::print(ctx.err, "tpurun: {}\n", error);
    for (const auto& [worker, r] : on_workers) {
      if (!r.error.empty()) {
        fmt::print(ctx.err, "[{}] gc failed: {}\n", worker.display(), r.error);
        continue;
      }
      fmt::print(ctx.out, "[{}] {} {} snapshots and {} unused objects ({:.1f} MiB)\n", worker.display(), verb,
                 r.snapshots_removed.size(), r.objects_removed, r.bytes_freed / 1048576.0);
    }
  }
  const bool worker_failed = std::any_of(on_workers.begin(), on_workers.end(),
                                         [](const auto& w) { return !w.second.error.empty(); });
  return report.errors.empty() && !worker_failed ? 0 : 1;
}

}  // namespace tpurun::cli

// tpurun gc: remove your old snapshots and the stored contents nothing uses.
#include "cli/gc.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "cli/help_texts.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/runs/watcher/records_verdict.hpp"
#include "tpurun/ui/gc_view.hpp"
#include "tpurun/ui/report.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/identity.hpp"

namespace tpurun::cli {

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
  WorkerGcReports on_workers;
  if (!pod.shared_mount) {  // the same on every worker's own copies, and the old log dirs of ended runs there
    const Target target = select_workers(load_pod(ctx.pod_request, ctx.env, ctx.processes), "all");
    request.worker_runs_done = runs_copied_whole(pod.logs_root, request.user);
    on_workers = collect_garbage_on_workers(target.workers, *ctx.make_transport(target.pod),
                                            pod.worker_root + "/staging", pod.worker_root + "/logs", request,
                                            ctx.cancel);
  }
  if (o.json) {
    print_json(ctx.out, gc_report_to_json(report, on_workers, o.dry_run));
  } else {
    print_gc_report(ctx.out, ctx.err, report, on_workers, o.dry_run);
  }
  const bool worker_failed = std::any_of(on_workers.begin(), on_workers.end(),
                                         [](const auto& w) { return !w.second.error.empty(); });
  return report.errors.empty() && !worker_failed ? 0 : 1;
}

}  // namespace tpurun::cli

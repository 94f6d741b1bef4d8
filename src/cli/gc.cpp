// tpurun gc: remove your old snapshots and the stored contents nothing uses.
#include "cli/gc.hpp"

#include <fmt/format.h>

#include "cli/identity.hpp"
#include "cli/report.hpp"
#include "tpurun/duration.hpp"
#include "tpurun/staging.hpp"
#include "tpurun/worker_select.hpp"

namespace tpurun::cli {

CLI::App* register_gc(CLI::App& app, GcOptions& o) {
  CLI::App* cmd = app.add_subcommand("gc", "Remove your snapshots older than a cutoff, and unused objects");
  cmd->add_option("--older-than", o.older_than, "Age cutoff, e.g. 14d, 36h")->default_str("14d");
  cmd->add_flag("--dry-run", o.dry_run, "List what would be removed; remove nothing");
  cmd->add_flag("--json", o.json, "Print the report as JSON");
  cmd->footer(R"(Only <staging_root>/<your user>/ is ever touched; other users' snapshots
are never removed. A running job's snapshot younger than the cutoff is kept.

Examples:
  tpurun gc --dry-run
  tpurun gc --older-than 3d)");
  return cmd;
}

int run_gc(const GcOptions& o, Context& ctx) {
  PodConfig pod = load_pod(ctx.pod_request, ctx.env, ctx.processes);
  if (pod.staging_root.empty()) {
    throw UsageError(fmt::format("pod '{}' has no staging_root; see docs/config.md", pod.name));
  }
  GcRequest request;
  request.staging_root = pod.staging_root;
  request.user = local_user(ctx.env);
  request.older_than = std::chrono::duration_cast<std::chrono::seconds>(parse_duration(o.older_than));
  request.now = std::chrono::system_clock::now();
  request.dry_run = o.dry_run;
  GcReport report = collect_garbage(request);

  if (o.json) {
    print_json(ctx.out, {{"dry_run", o.dry_run},
                         {"snapshots_removed", report.snapshots_removed},
                         {"objects_removed", report.objects_removed},
                         {"bytes_freed", report.bytes_freed},
                         {"errors", report.errors}});
  } else {
    const char* verb = o.dry_run ? "would remove" : "removed";
    for (const std::string& dir : report.snapshots_removed) fmt::print(ctx.out, "{} {}\n", verb, dir);
    fmt::print(ctx.out, "{} {} snapshots and {} unused objects ({:.1f} MiB)\n", verb,
               report.snapshots_removed.size(), report.objects_removed, report.bytes_freed / 1048576.0);
    for (const std::string& error : report.errors) fmt::print(ctx.err, "tpurun: {}\n", error);
  }
  return report.errors.empty() ? 0 : 1;
}

}  // namespace tpurun::cli

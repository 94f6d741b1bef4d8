// tpurun runs: recent runs of this user, with every worker's job state.
#include "cli/runs.hpp"

#include <fmt/format.h>

#include "cli/help_texts.hpp"
#include "tpurun/runs/watcher/recent_runs.hpp"
#include "tpurun/ui/report.hpp"
#include "tpurun/ui/runs_view.hpp"
#include "tpurun/util/identity.hpp"
#include "tpurun/util/usage_error.hpp"

namespace tpurun::cli {

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
  const auto warn = [&](const std::string& line) { fmt::print(ctx.err, "tpurun: {}\n", line); };
  std::vector<RunView> runs = recent_runs(pod.logs_root, local_user(ctx.env), o.limit, warn);
  if (!o.no_check) check_liveness(runs, ctx, 64, warn);

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

#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/context.hpp"
#include "cli/target.hpp"
#include "tpurun/tpu_kill.hpp"

namespace tpurun::cli {

struct KillCommandOptions {
  TargetOptions target;
  std::string run;            // --run RUN: only that tpurun run
  std::string grace = "10s";  // SIGTERM, then this long, then SIGKILL
  bool dry_run = false;
  bool json = false;
  bool force = false;  // also other users' processes (needs --yes and sudo -n)
  bool yes = false;
};

CLI::App* register_kill(CLI::App& app, KillCommandOptions& options);
int run_kill(const KillCommandOptions& options, Context& ctx);

// --grace in milliseconds ("10s", "500ms", "1m"; at most 24h). Throws UsageError.
int parse_grace(const std::string& text);

// What happened (or, for a dry run, would happen) on each worker, then the
// final state of every worker grouped like `tpurun status`.
std::string format_kill_report(const std::vector<WorkerKill>& reports, const KillRequest& request,
                               bool color);
nlohmann::json kill_report_to_json(const WorkerKill& report, bool dry_run);
int kill_exit_code(const std::vector<WorkerKill>& reports, bool dry_run);

}  // namespace tpurun::cli

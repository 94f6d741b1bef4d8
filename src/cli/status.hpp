#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/context.hpp"
#include "cli/target.hpp"
#include "tpurun/tpu_scan.hpp"

namespace tpurun::cli {

struct StatusOptions {
  TargetOptions target;
  bool json = false;
  bool all = false;  // --all: every pod of the config (cli/board.hpp)
  std::optional<std::string> watch;  // --watch [INTERVAL] with --all ("" when given without one)
};

CLI::App* register_status(CLI::App& app, StatusOptions& options);
int run_status(const StatusOptions& options, Context& ctx);

// The terminal view: identical rows grouped by worker set, then every other
// user's job with user, pid, age and command, then notes with fixes.
std::string format_status_table(const std::string& pod_name, const std::vector<WorkerScanResult>& results,
                                bool color);
// Just the rows: one per group of workers with the same state and detail.
std::string format_state_rows(const std::vector<WorkerScanResult>& results, bool color);

}  // namespace tpurun::cli

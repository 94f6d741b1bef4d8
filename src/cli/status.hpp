#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "tpurun/tpu/scan.hpp"
#include "tpurun/transport/context.hpp"

namespace tpurun::cli {

struct StatusOptions {
  TargetOptions target;
  bool json = false;
  bool all = false;  // --all: every pod of the config (the board)
  std::optional<std::string> watch;  // --watch [INTERVAL] with --all ("" when given without one)
};

CLI::App* register_status(CLI::App& app, StatusOptions& options);
int run_status(const StatusOptions& options, Context& ctx);

}  // namespace tpurun::cli

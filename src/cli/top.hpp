#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "cli/app.hpp"
#include "tpurun/transport/context.hpp"

namespace tpurun::cli {

struct TopOptions {
  TargetOptions target;
  bool json = false;
  std::optional<std::string> watch;  // --watch [INTERVAL] ("" when given without one)
};

CLI::App* register_top(CLI::App& app, TopOptions& options);
int run_top(const TopOptions& options, Context& ctx);

}  // namespace tpurun::cli

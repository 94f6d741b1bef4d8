#pragma once
#include <CLI/CLI.hpp>

#include "cli/app.hpp"

namespace tpurun::cli {

struct RunsOptions {
  int limit = 20;
  bool json = false;
  bool no_check = false;  // don't ask the workers whether jobs are alive
};

CLI::App* register_runs(CLI::App& app, RunsOptions& options);
int run_runs(const RunsOptions& options, Context& ctx);

}  // namespace tpurun::cli

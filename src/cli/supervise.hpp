#pragma once
// tpurun _supervise LOG_DIR: the run's watcher (hidden; started by stage and logs -f).
#include <CLI/CLI.hpp>
#include <string>

#include "cli/app.hpp"

namespace tpurun::cli {

struct SuperviseOptions {
  std::string log_dir;
};

CLI::App* register_supervise(CLI::App& app, SuperviseOptions& options);
int run_supervise(const SuperviseOptions& options, Context& ctx);

}  // namespace tpurun::cli

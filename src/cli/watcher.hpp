#pragma once
// tpurun _watcher LOG_DIR: the run's watcher (hidden; started by stage and logs -f).
#include <CLI/CLI.hpp>
#include <string>

#include "cli/app.hpp"

namespace tpurun::cli {

struct WatcherOptions {
  std::string log_dir;
};

CLI::App* register_watcher(CLI::App& app, WatcherOptions& options);
int run_watcher(const WatcherOptions& options, Context& ctx);

}  // namespace tpurun::cli

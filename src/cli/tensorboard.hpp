#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/app.hpp"

namespace tpurun::cli {

struct TensorBoardOptions {
  std::vector<std::string> runs;   // ids, unique prefixes, or "last"/"latest"
  int port = 6006;
  std::string host;                // the dev VM's name in the ssh line (default: hostname -f)
  bool bind_all = false;           // serve on every interface, not only localhost
  bool dry_run = false;
  bool json = false;               // with --dry-run
};

CLI::App* register_tensorboard(CLI::App& app, TensorBoardOptions& options);
int run_tensorboard(const TensorBoardOptions& options, Context& ctx);

}  // namespace tpurun::cli

#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "cli/app.hpp"

namespace tpurun::cli {

struct InitOptions {
  std::string zone;
  std::string project;
  std::string shared;
  std::string output = "tpurun.json";
  bool force = false;
  bool dry_run = false;
};

CLI::App* register_init(CLI::App& app, InitOptions& options);
int run_init(const InitOptions& options, Context& ctx);

}  // namespace tpurun::cli

#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "cli/app.hpp"

namespace tpurun::cli {

struct GcOptions {
  std::string older_than = "14d";
  bool dry_run = false;
  bool json = false;
};

CLI::App* register_gc(CLI::App& app, GcOptions& options);
int run_gc(const GcOptions& options, Context& ctx);

}  // namespace tpurun::cli

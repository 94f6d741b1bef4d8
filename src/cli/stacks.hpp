#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "cli/app.hpp"
#include "tpurun/transport/context.hpp"

namespace tpurun::cli {

struct StacksOptions {
  std::string run;  // empty: the newest of your runs that is still running
  TargetOptions target;
  bool json = false;
  bool dry_run = false;
  bool native = false;
  std::string timeout = "2s";
};

CLI::App* register_stacks(CLI::App& app, StacksOptions& options);
int run_stacks(const StacksOptions& options, Context& ctx);

}  // namespace tpurun::cli

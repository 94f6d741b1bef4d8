#pragma once
// The flags every pod command shares (--worker, --fanout) and their resolution
// into a pod plus the selected workers.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/context.hpp"
#include "tpurun/pod.hpp"

namespace tpurun::cli {

struct TargetOptions {
  std::string workers = "all";
  int fanout = 64;
};

struct Target {
  PodConfig pod;
  std::vector<Worker> workers;  // the selected ones, in worker order
};

void add_target_options(CLI::App& cmd, TargetOptions& options);
// Loads the pod and applies --worker. Throws ConfigError / UsageError.
Target resolve_target(const TargetOptions& options, Context& ctx);

}  // namespace tpurun::cli

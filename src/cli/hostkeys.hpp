#pragma once
// tpurun hostkeys: for gcloud pods, which workers' host keys gcloud has
// recorded (by HostKeyAlias in ~/.ssh/google_compute_known_hosts, where
// tpurun checks them first), and --import to record them once through gcloud.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "tpurun/transport/context.hpp"

namespace tpurun::cli {

struct HostKeysOptions {
  TargetOptions target;
  bool import = false;
  bool dry_run = false;
  bool json = false;
};

CLI::App* register_hostkeys(CLI::App& app, HostKeysOptions& options);
int run_hostkeys(const HostKeysOptions& options, Context& ctx);

}  // namespace tpurun::cli

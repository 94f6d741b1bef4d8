#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "cli/app.hpp"
#include "tpurun/transport/context.hpp"

namespace tpurun::cli {

struct ProfileOptions {
  std::string run = "last";
  TargetOptions target;
  std::string duration = "2s";
  std::string delay = "0";
  int port = 9999;
  int host_tracer_level = 2;
  int device_tracer_level = 1;
  int python_tracer_level = 0;
  bool json = false;
  bool dry_run = false;
};

CLI::App* register_profile(CLI::App& app, ProfileOptions& options);
int run_profile(const ProfileOptions& options, Context& ctx);

}  // namespace tpurun::cli

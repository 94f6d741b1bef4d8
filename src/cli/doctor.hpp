#pragma once
#include <CLI/CLI.hpp>

#include "cli/app.hpp"

namespace tpurun::cli {

struct DoctorOptions {
  TargetOptions target;
  bool json = false;
};

CLI::App* register_doctor(CLI::App& app, DoctorOptions& options);
int run_doctor(const DoctorOptions& options, Context& ctx);

}  // namespace tpurun::cli

#pragma once
#include <CLI/CLI.hpp>

#include "cli/app.hpp"

namespace tpurun::cli {

struct DoctorOptions {
  TargetOptions target;
  bool json = false;
  // Run by `up` right after it saw the TPU VM READY and kept that describe:
  // no second describe, no `gcloud config list` (gcloud has just worked).
  bool after_up = false;
};

CLI::App* register_doctor(CLI::App& app, DoctorOptions& options);
int run_doctor(const DoctorOptions& options, Context& ctx);

}  // namespace tpurun::cli

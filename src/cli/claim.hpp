#pragma once
// tpurun claim / release / claims: "this pod is mine until ..." for colleagues.
#include <CLI/CLI.hpp>
#include <string>

#include "cli/app.hpp"

namespace tpurun::cli {

struct ClaimOptions {
  std::string pod;
  std::string duration;
  std::string note;
  bool extend = false;
  bool dry_run = false;
};

struct ReleaseOptions {
  std::string pod;
  bool dry_run = false;
};

struct ClaimsOptions {
  bool json = false;
};

CLI::App* register_claim(CLI::App& app, ClaimOptions& options);
int run_claim(const ClaimOptions& options, Context& ctx);
CLI::App* register_release(CLI::App& app, ReleaseOptions& options);
int run_release(const ReleaseOptions& options, Context& ctx);
CLI::App* register_claims(CLI::App& app, ClaimsOptions& options);
int run_claims(const ClaimsOptions& options, Context& ctx);

}  // namespace tpurun::cli

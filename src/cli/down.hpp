#pragma once
#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "cli/app.hpp"
#include "tpurun/pod/pod.hpp"

namespace tpurun::cli {

struct DownOptions {
  bool yes = false;
  bool dry_run = false;
  bool force = false;
};

CLI::App* register_down(CLI::App& app, DownOptions& options);
int run_down(const DownOptions& options, Context& ctx);

// What `down --yes` does to `pod` (stage --down calls it once its run has
// ended): 0 when nothing is left, 1 when refused or failed (said on stderr).
int down_pod(const PodConfig& pod, const DownOptions& options, Context& ctx);

// Why `down --yes` of `pod` would be refused now (down's safety rules, or
// gcloud could not say), or nullopt: what stage --down asks before its run
// starts, so that a refusal never comes after the run.
std::optional<std::string> down_refused_now(const PodConfig& pod, Context& ctx);

}  // namespace tpurun::cli

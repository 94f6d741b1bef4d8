#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "tpurun/tpu/kill.hpp"
#include "tpurun/transport/context.hpp"
#include "tpurun/util/duration.hpp"

namespace tpurun::cli {

struct KillCommandOptions {
  TargetOptions target;
  std::string run;            // --run RUN: only that tpurun run
  std::string grace = format_duration_ms(kDefaultGraceMs);  // SIGTERM, then this long, then SIGKILL
  bool dry_run = false;
  bool json = false;
  bool force = false;  // also other users' processes (needs --yes and sudo -n)
  bool yes = false;
};

CLI::App* register_kill(CLI::App& app, KillCommandOptions& options);
int run_kill(const KillCommandOptions& options, Context& ctx);

// --grace (kill's and stage's) in milliseconds ("10s", "500ms", "1m"; at most
// kMaxGraceMs). Throws UsageError.
int parse_grace(const std::string& text);

}  // namespace tpurun::cli

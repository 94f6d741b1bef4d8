#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "tpurun/runs/stage/job_env.hpp"
#include "tpurun/transport/context.hpp"

namespace tpurun::cli {

struct StageOptions {
  TargetOptions target;
  bool ignore_claim = false;      // --ignore-claim: go ahead on another user's claimed pod
  std::optional<std::string> wait_pod;  // --wait [INTERVAL] for a free pod ("" when given bare)
  std::vector<std::string> tags;  // K=V or a bare word; appended to the run id
  JobEnvOptions env;              // --env, --env-file, --env-from: exported to the job
  bool detach = false;
  bool json = false;
  bool dry_run = false;
  bool skip_preflight = false;
  bool kill_previous = false;
  bool raw = false;  // --raw: no collapsing of identical lines
  int megascale_port = 0;  // --megascale-port; 0: the pod's (multi-slice runs only)
  // The gang rules (docs/runs.md).
  std::string on_failure = "stop";  // stop | continue
  int restarts = 0;
  std::string lost_after = "60s";
  std::string grace = "10s";
  // --restart-on-exit-codes [LIST]: "" when given bare (xpk's 42 and 127-255)
  std::optional<std::string> restart_on_exit_codes;
  bool recreate = false;                // --recreate: create a preempted TPU VM again
  bool down = false;                    // --down: `tpurun down` once the run has ended
  std::optional<int> max_preemptions;   // --max-preemptions (default 3)
  std::string stall_after = "30m";
  std::string on_stall = "report";
  std::vector<std::string> argv;  // after --
};

CLI::App* register_stage(CLI::App& app, StageOptions& options);
int run_stage(const StageOptions& options, Context& ctx);

}  // namespace tpurun::cli

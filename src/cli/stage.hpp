#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "tpurun/runs/record/run_record.hpp"
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
  // The gang rules (docs/runs.md), as given; their defaults are GangRules'.
  std::string on_failure = GangRules{}.on_failure;  // stop | continue
  int restarts = GangRules{}.restarts;
  std::string lost_after = format_duration_ms(GangRules{}.lost_after_ms);
  std::string grace = format_duration_ms(GangRules{}.grace_ms);
  // --restart-on-exit-codes [LIST]: "" when given bare (xpk's 42 and 127-255)
  std::optional<std::string> restart_on_exit_codes;
  bool recreate = false;                // --recreate: create a preempted TPU VM again
  bool down = false;                    // --down: `tpurun down` once the run has ended
  std::optional<int> max_preemptions;   // --max-preemptions (only with --recreate)
  std::string stall_after = format_duration_ms(GangRules{}.stall_after_ms);
  std::string on_stall = GangRules{}.on_stall;
  std::vector<std::string> argv;  // after --
};

CLI::App* register_stage(CLI::App& app, StageOptions& options);
int run_stage(const StageOptions& options, Context& ctx);

}  // namespace tpurun::cli

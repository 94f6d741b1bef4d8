#pragma once
// The command table (app.cpp) and what every pod command shares: the
// --worker and --fanout flags and their resolution into a Target.
#include <CLI/CLI.hpp>
#include <string>

#include "tpurun/pod/pod.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/transport/context.hpp"

namespace tpurun::cli {

// Parses argv, runs the chosen subcommand, maps errors to exit codes.
int main(int argc, char** argv);

struct TargetOptions {
  std::string workers = "all";
  int fanout = 64;
};

void add_target_options(CLI::App& cmd, TargetOptions& options);
// Loads the pod and applies --worker. Throws ConfigError / UsageError.
Target resolve_target(const TargetOptions& options, Context& ctx);

// The pod's roots and SSH settings, for commands that read run records
// (logs, runs, gc, tensorboard): no gcloud describe, so they work while the
// TPU VM is preempted, stopped or deleted.
PodConfig load_pod_records(Context& ctx);

// A run as the user names it (an id, a prefix, "last") and the pod whose
// SSH settings reach its workers (a multi-slice run's own pod when --pod was
// not given): for commands that go to a run's workers (profile, stacks).
struct RunTarget {
  PodConfig pod;
  RunRecord run;
};
RunTarget load_run_target(const std::string& run, Context& ctx);
// The run's workers that --worker picks (by their index in the run).
std::vector<Worker> chosen_run_workers(const RunRecord& run, const std::string& spec);

}  // namespace tpurun::cli

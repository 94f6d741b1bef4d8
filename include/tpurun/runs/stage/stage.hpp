#pragma once
// A stage, start to launch: the CLI turns its flags into a StageRequest,
// plan_stage() resolves where the run goes and checks everything that needs
// no change, and start_run() starts the run it plans: preflight, snapshot,
// log dir and run record, the watcher, the launch on every worker.
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/fanout/printer.hpp"
#include "tpurun/pod/slices.hpp"
#include "tpurun/runs/launch/launch.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/staging/snapshot.hpp"
#include "tpurun/staging/snapshot_pin.hpp"
#include "tpurun/transport/context.hpp"

namespace tpurun {

struct StageRequest {
  std::vector<std::string> argv;                // the job's command
  std::vector<std::string> tags;                // K=V or bare words, appended to the run id
  std::map<std::string, std::string> env;       // --env*: for the job, never written down
  std::string workers = "all";                  // --worker
  int fanout = 64;
  bool ignore_claim = false;
  std::optional<std::chrono::milliseconds> wait_pod;  // --wait for --pod auto|glob
  int megascale_port = 0;                       // 0: the pod's (multi-slice runs only)
  bool skip_preflight = false;
  bool kill_previous = false;
  GangRules gang;  // docs/runs.md
};

struct StagePlan {
  StageRequest request;
  Target target;                      // the pod (picked for --pod auto) and the selected workers
  std::optional<MultiSlice> slices;   // a multi-slice pod: what its jobs are told
  std::string user;                   // owner of the snapshot and the log dir
  std::string project;                // the log dir's project part: the source dir's name
  std::string source_dir;             // what is snapshotted: the current directory
};

// Picks the pod (--pod auto, waiting with --wait), loads it, applies
// --worker, and refuses a pod without roots, a pod another user claimed,
// multi-slice flags that make no sense and --recreate where tpurun cannot
// recreate the TPU VM. Writes nothing. Throws UsageError.
StagePlan plan_stage(StageRequest request, Context& ctx);

// --recreate: the commands the run's watcher would run on a preemption
// (delete, create, key and host keys), for --dry-run; `log_dir` is where the
// metadata files would be.
std::vector<std::vector<std::string>> planned_recreate(const StagePlan& plan, const std::string& log_dir);

struct StagedRun {
  RunRecord record;
  StagedSnapshot staged;
  int watcher_pid = 0;
  LaunchResult launched;          // one outcome per selected worker
  std::vector<Worker> running;    // where the job started
  SnapshotPin pin;                // gc keeps the snapshot while this stage holds it
};

// Refuses a busy TPU (preflight), snapshots, writes the log dir and run.json,
// starts the run's watcher, then launches on every worker. A worker where
// the job did not start gets exit record 255 so the watcher counts it as
// failed. Throws (nothing launched) when a step before the launch fails.
StagedRun start_run(const StagePlan& plan, Context& ctx, LinePrinter& printer);

}  // namespace tpurun

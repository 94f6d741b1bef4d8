#pragma once
// The per-run watcher: a detached `tpurun` process on the dev VM that applies
// the gang rule to one run with no client attached. It reads the workers' exit
// records from the log dir, probes the jobs' liveness in the background, stops
// the whole run when one worker fails (or is lost), relaunches it when
// --restarts allows, and records everything in state.json and watcher.log.
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/pod/pod.hpp"
#include "tpurun/pod/tpu_node.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/transport/transport.hpp"
#include "tpurun/util/cancel.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {

struct WatcherSetup {
  RunRecord record;
  PodConfig pod;                            // SSH settings, device globs, gcloud spec
  std::map<std::string, std::string> env;   // the --env values, for relaunches
  bool env_missing = false;                 // the values were not kept: no relaunch possible
  std::string env_dir;                      // where they are kept (forgotten when the run ends)
  std::string audit_path;                   // the user's audit log (stage --recreate's deletes and creates)
  int fanout = 64;
  // Called with the new VM's describe after a recreate: the user's kept
  // describe (up to 10 minutes) still names the deleted VM.
  std::function<void(const TpuNode&)> keep_new_vm;
  // "`down` means down" (issue 39, finding 9): a `tpurun down` of the pod's
  // TPU VM by this user since the run was staged, named (pod/down_intent);
  // the run then ends as stopped, and its VM is not made again.
  std::function<std::optional<std::string>()> down_asked = [] { return std::optional<std::string>(); };
  std::chrono::milliseconds poll{1000};        // how often exit records are read
  std::chrono::milliseconds probe_every{3000};  // how often jobs without one are probed
  std::chrono::milliseconds first_backoff{2000};
};

// Runs until the run has ended (then returns 0) or `cancel` fires (a signal:
// without a stop marker the jobs keep running and the run becomes unwatched).
int watch_run(const WatcherSetup& setup, Transport& transport, ProcessRunner& processes,
                  const CancelToken& cancel);

}  // namespace tpurun

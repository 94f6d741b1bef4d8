#pragma once
// The per-run watcher: a detached `tpurun` process on the dev VM that applies
// the gang rule to one run with no client attached. It reads the workers' exit
// records from the log dir, probes the jobs' liveness in the background, stops
// the whole run when one worker fails (or is lost), relaunches it when
// --restarts allows, and records everything in state.json and supervisor.log.
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tpurun/cancel.hpp"
#include "tpurun/pod.hpp"
#include "tpurun/run_record.hpp"
#include "tpurun/system.hpp"
#include "tpurun/tpu_node.hpp"
#include "tpurun/transport.hpp"

namespace tpurun {

struct SupervisorSetup {
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
  std::chrono::milliseconds poll{1000};        // how often exit records are read
  std::chrono::milliseconds probe_every{3000};  // how often jobs without one are probed
  std::chrono::milliseconds first_backoff{2000};
};

// Runs until the run has ended (then returns 0) or `cancel` fires (a signal:
// without a stop marker the jobs keep running and the run becomes unwatched).
int supervise_run(const SupervisorSetup& setup, Transport& transport, ProcessRunner& processes,
                  const CancelToken& cancel);

// May the run be relaunched now? A gcloud pod's TPU VM (each slice's) is
// described again: READY gives the workers' current addresses; PREEMPTED,
// TERMINATED or deleted means it never comes back by itself (`gone`); any
// other state is waited for. Then each worker must be reachable and hold none
// of the caller's processes nor anyone's TPU device.
struct RestartCheck {
  std::string waiting_for;      // "" when nothing is waited for
  std::string gone;             // the TPU VM cannot come back by itself: why
  std::string gone_state;       // PREEMPTED, TERMINATED or NOT_FOUND
  TpuNode gone_node;            // what describe said of it (name, id; state NOT_FOUND when deleted)
  std::vector<Worker> workers;  // the run's workers at their current addresses
  bool ready() const { return waiting_for.empty() && gone.empty(); }
};
RestartCheck check_restart(const RunRecord& record, const PodConfig& pod, Transport& transport,
                           ProcessRunner& processes, int fanout, const CancelToken& cancel);
// The TPU VM part alone (no worker is asked): nothing to do for other pods.
RestartCheck check_tpu_vms(const RunRecord& record, const PodConfig& pod, ProcessRunner& processes);

}  // namespace tpurun

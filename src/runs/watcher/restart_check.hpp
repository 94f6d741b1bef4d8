#pragma once
// What a relaunch waits for (restart_check.cpp): the watcher asks before
// every next attempt.
#include <string>
#include <vector>

#include "tpurun/pod/pod.hpp"
#include "tpurun/pod/tpu_node.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/transport/transport.hpp"
#include "tpurun/util/cancel.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {

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

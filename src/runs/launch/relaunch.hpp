#pragma once
// The watcher's relaunch of a run: every worker reserved again, then the job
// launched on all of them, or on none.
#include <vector>

#include "tpurun/pod/worker.hpp"
#include "tpurun/runs/launch/launch.hpp"
#include "tpurun/transport/transport.hpp"
#include "tpurun/util/cancel.hpp"

namespace tpurun {

// Reserves every worker (runs/launch/reservation.hpp), with no TPU scan (the
// watcher's restart check has looked), then launches the job on all of them
// in parallel; launches nowhere when any worker cannot be reserved within
// `wait_s` (then not_reserved says why). A stage does not use it: it reserves
// first, and launches once the snapshot and the run's records are ready.
LaunchResult relaunch_on_workers(const LaunchSpec& spec, const std::vector<Worker>& workers, Transport& transport,
                                 int fanout, const CancelToken& cancel, int wait_s = 10);

}  // namespace tpurun

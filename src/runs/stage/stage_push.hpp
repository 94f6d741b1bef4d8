#pragma once
// A pod with no shared mount: the stage's snapshot copied to every reserved
// worker, and the run's log dir made there, before anything starts.
#include <string>

#include "runs/launch/reservation.hpp"
#include "tpurun/fanout/printer.hpp"
#include "tpurun/runs/stage/stage.hpp"

namespace tpurun {

struct PushedRun {
  std::string staged_dir;  // on the workers
  std::string log_dir;     // on the workers
};

// Throws (nothing started) when a worker did not get the snapshot whole,
// naming each such worker and why.
PushedRun push_to_workers(const StagePlan& plan, const StagedSnapshot& staged, const std::string& run_id,
                          Reservations& reservations, LinePrinter& printer, const CancelToken& cancel);

}  // namespace tpurun

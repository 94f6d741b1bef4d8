#pragma once
// Stalled runs (issue 18): a hung collective, or one stuck host with the
// others waiting in it, exits nothing, so exit records and liveness probes
// never see it. What does show it: every worker's chips at 0% duty cycle
// (libtpu's metrics) and no new line in any worker's log, for --stall-after.
#include <chrono>
#include <optional>
#include <vector>

#include "tpurun/tpu/metrics.hpp"

namespace tpurun {

// True when every worker answered with figures and every chip is at 0%;
// false when any chip is busy; nullopt when it is not known (a worker without
// figures: no workload yet, unreachable, the service failed).
std::optional<bool> gang_idle(const std::vector<TpuMetricsOutcome>& workers);

// The rule as a small state machine, fed one look per metrics round. No I/O,
// no clock of its own.
class StallRule {
 public:
  using Time = std::chrono::system_clock::time_point;
  explicit StallRule(std::chrono::milliseconds after) : after_(after) {}
  // A new attempt: nothing quiet yet.
  void reset() { quiet_since_.reset(); }
  // `idle`: gang_idle of this round; `log_grew`: a worker's log grew since the
  // last round. Returns when the quiet stretch began once it has lasted
  // `after` (the run is stalled), else nullopt.
  std::optional<Time> observe(std::optional<bool> idle, bool log_grew, Time now);

 private:
  std::chrono::milliseconds after_;
  std::optional<Time> quiet_since_;
};

// How often the watcher reads the metrics for a given --stall-after: six
// looks per stretch, between 1s and 30s apart.
std::chrono::milliseconds stall_poll_interval(std::chrono::milliseconds stall_after);

}  // namespace tpurun

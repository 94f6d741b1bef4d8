#pragma once
// Stalled runs (issue 18): a hung collective, or one stuck host with the
// others waiting in it, exits nothing, so exit records and liveness probes
// never see it. What does show it: every worker's chips at 0% duty cycle
// (libtpu's metrics) and no new line in any worker's log, for --stall-after.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "tpurun/tpu_metrics.hpp"
#include "tpurun/transport.hpp"

namespace tpurun {

// True when every worker answered with figures and every chip is at 0%;
// false when any chip is busy; nullopt when it is not known (a worker without
// figures: no workload yet, unreachable, the service failed).
std::optional<bool> gang_idle(const std::vector<TpuMetricsOutcome>& workers);

// The rule as a small state machine, fed one look per metrics round. No I/O,
// no clock of its own.
class StallWatch {
 public:
  using Time = std::chrono::system_clock::time_point;
  explicit StallWatch(std::chrono::milliseconds after) : after_(after) {}
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

// Reads every worker's metrics in the background, a round every `every`, on
// connections of its own kept open between rounds (as the liveness probes).
class DutyProber {
 public:
  DutyProber(Transport& transport, std::vector<Worker> workers, int fanout, std::chrono::milliseconds every);
  ~DutyProber();
  DutyProber(const DutyProber&) = delete;
  DutyProber& operator=(const DutyProber&) = delete;
  // The latest complete round since the last call (one outcome per worker, in order).
  std::optional<std::vector<TpuMetricsOutcome>> take();

 private:
  void loop();
  Transport& transport_;
  std::vector<Worker> workers_;
  int fanout_;
  std::chrono::milliseconds every_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<std::vector<TpuMetricsOutcome>> fresh_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// How often the watcher reads the metrics for a given --stall-after: six
// looks per stretch, between 1s and 30s apart.
std::chrono::milliseconds stall_poll_interval(std::chrono::milliseconds stall_after);

}  // namespace tpurun

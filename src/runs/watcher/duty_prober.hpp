#pragma once
// The watcher's metrics rounds for the stall rule (stall_rule.hpp): every
// worker's libtpu figures, read in the background.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "tpurun/tpu/metrics.hpp"
#include "tpurun/transport/transport.hpp"

namespace tpurun {

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

}  // namespace tpurun

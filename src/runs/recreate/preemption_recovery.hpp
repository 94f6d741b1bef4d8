#pragma once
// What the run's watcher does when it finds its TPU VM PREEMPTED, TERMINATED
// or deleted: record the preemption, and with stage --recreate (within
// --max-preemptions) create the VM again (runs/recreate) so that the next
// attempt can go on; afterwards, record when and as which attempt it resumed.
#include <chrono>
#include "runs/watcher/restart_check.hpp"
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runs/recreate/recreate.hpp"
#include "runs/watcher/gang.hpp"
#include "tpurun/runs/watcher/watcher.hpp"

namespace tpurun {

class PreemptionRecovery {
 public:
  using Say = std::function<void(const std::string&)>;
  // `heartbeat` is called while a recreate waits (state.json stays fresh).
  PreemptionRecovery(const WatcherSetup& setup, Transport& transport, ProcessRunner& processes,
                     const CancelToken& cancel, Say say, std::function<void()> heartbeat);

  // The TPU VM is gone (check.gone). True when it was created again and the
  // run may be relaunched; false when the run ends as preempted (the monitor's
  // verdict) or the watcher was signalled (signalled()).
  bool recover(GangMonitor& monitor, const RestartCheck& check, const std::vector<Worker>& workers);
  // The relaunch after a recovery is done: when, which attempt, how long the VM was down.
  void resumed(GangMonitor& monitor, int attempt);
  bool signalled() const { return signalled_; }
  // What state.json's message says after recover() returned false.
  const std::string& message() const { return message_; }

 private:
  bool give_up(GangMonitor& monitor, const std::string& why);
  // Stopped on purpose (kill --run, down): the run ends as stopped. `granted`:
  // a preemption of this recover() was granted an attempt, withdrawn now.
  bool stop_run(GangMonitor& monitor, const std::string& why, bool granted);
  RecreateJob recreate_job(const std::vector<Worker>& workers) const;

  const WatcherSetup& setup_;
  Transport& transport_;
  ProcessRunner& processes_;
  const CancelToken& cancel_;
  Say say_;
  std::function<void()> heartbeat_;
  std::string recorded_id_;  // the VM the run is on: stage's describe, then each recreate's
  std::optional<std::chrono::steady_clock::time_point> recovered_at_;
  std::string message_;
  bool signalled_ = false;
};

}  // namespace tpurun

// A launcher's answer from one worker (launch_script.cpp's TPURUN-LAUNCHED
// line), for whoever launched: a stage's Reservations, or a relaunch.
#include "tpurun/runs/launch/launch.hpp"

namespace tpurun {

void settle_launch(WorkerOutcome& launch, LaunchResult& result) {
  auto pid = launch.ok() ? parse_launched_pid(launch.out) : std::nullopt;
  if (pid) {
    result.pids[launch.worker.index] = *pid;
  } else if (launch.exit()) {  // the launcher ran but failed: its stderr says why
    std::string why = launch.err.empty() ? "the launcher failed" : launch.err;
    while (!why.empty() && why.back() == '\n') why.pop_back();
    launch.result = TransportError{ErrorKind::channel, "launch failed: " + why};
  }
}

}  // namespace tpurun

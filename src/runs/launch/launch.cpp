// Launching a run's job on every worker: reserve all, then launch on all
// (reservation.cpp), or nowhere.
#include "tpurun/runs/launch/launch.hpp"

#include <fmt/format.h>

#include "runs/launch/reservation.hpp"

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

LaunchResult launch_on_workers(const LaunchSpec& spec, const std::vector<Worker>& workers, Transport& transport,
                               int fanout, const CancelToken& cancel, int wait_s) {
  ReserveSpec reserve;
  reserve.run_id = spec.run_id;
  reserve.scan = false;  // the watcher's restart check has looked at the TPU
  reserve.wait_s = wait_s;
  reserve.lock_path = spec.reservation_lock;
  reserve.fanout = fanout;
  Reservations reservations(workers, transport, reserve, cancel);
  if (reservations.complete()) return reservations.launch(spec);
  LaunchResult result;
  result.not_reserved = reservations.busy_lines();
  for (const WorkerReservation& w : reservations.workers()) {
    if (w.state == ReserveState::failed) result.not_reserved.push_back(fmt::format("{}: {}", w.worker.display(), w.error));
    WorkerOutcome outcome;
    outcome.worker = w.worker;
    outcome.result = TransportError{ErrorKind::channel, "not launched: not every worker could be reserved"};
    result.outcomes.push_back(std::move(outcome));
  }
  return result;
}

}  // namespace tpurun

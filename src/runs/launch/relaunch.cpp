#include "runs/launch/relaunch.hpp"

#include <fmt/format.h>

#include "runs/launch/reservation.hpp"

namespace tpurun {

LaunchResult relaunch_on_workers(const LaunchSpec& spec, const std::vector<Worker>& workers, Transport& transport,
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
    if (w.state == ReserveState::failed) {
      result.not_reserved.push_back(fmt::format("{}: {}", w.worker.display(), w.error));
    }
    WorkerOutcome outcome;
    outcome.worker = w.worker;
    outcome.result = TransportError{ErrorKind::channel, "not launched: not every worker could be reserved"};
    result.outcomes.push_back(std::move(outcome));
  }
  return result;
}

}  // namespace tpurun

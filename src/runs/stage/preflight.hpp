#pragma once
// stage's preflight: never start a job beside someone else's. The TPU is
// looked at under each worker's reservation (runs/launch/reservation.hpp), so
// nothing can start there between the look and the launch.
#include <stdexcept>
#include <string>
#include <vector>

#include "runs/launch/reservation.hpp"
#include "tpurun/fanout/printer.hpp"
#include "tpurun/pod/pod.hpp"
#include "tpurun/transport/context.hpp"
#include "tpurun/transport/transport.hpp"

namespace tpurun {

struct PreflightOptions {
  bool kill_previous = false;  // first stop the caller's own jobs that hold the TPU
  int fanout = 64;
  // This host's uid and gid for the caller: a worker where the same user has
  // other numbers refuses (NFS owns files by number). -1: not checked.
  int local_uid = -1;
  int local_gid = -1;
};

class UidMismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The workers could not all be reserved, or a TPU is not free: nothing was
// launched. `busy` is true when waiting may help (another stage or run holds
// a worker, or someone else holds a TPU); false for what waiting cannot fix.
class PreflightRefusal : public std::runtime_error {
 public:
  PreflightRefusal(const std::string& what, bool busy, bool own_runs_only = false)
      : std::runtime_error(what), busy_(busy), own_runs_only_(own_runs_only) {}
  bool busy() const { return busy_; }
  // Nothing in the way but the caller's own runs' reservations: most often a
  // run that has just ended, its last processes exiting.
  bool own_runs_only() const { return own_runs_only_; }

 private:
  bool busy_;
  bool own_runs_only_;
};

// --kill-previous, before reserving: the caller's own processes that hold the
// TPU on these workers, stopped as `tpurun kill` stops them (whole trees,
// TERM then KILL), their runs' watchers told first so that those runs end as
// stopped. Jobs that do not hold the TPU are left alone. Returns how many
// processes were stopped.
size_t kill_previous(const PodConfig& pod, const std::vector<Worker>& workers, Transport& transport,
                     const PreflightOptions& options, LinePrinter& printer, Context& ctx);

// Judges what each worker answered under its reservation. A worker where the
// caller has another uid or gid than here refuses first (UidMismatch, with
// the fixes); then a worker reserved by another stage or run, a TPU held by
// someone else or by the caller's own earlier job, and an unreachable worker
// refuse (PreflightRefusal, naming who and what to do); a stale lock is
// cleaned under kill's rule; a partial view warns and goes on.
void judge_preflight(const PodConfig& pod, Reservations& reservations, const PreflightOptions& options,
                     LinePrinter& printer, Context& ctx);

}  // namespace tpurun

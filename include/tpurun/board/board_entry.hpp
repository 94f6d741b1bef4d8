#pragma once
// The board (`status --all`): one entry per pod of the config, with its
// state, who holds it and the claim on it.
#include <optional>
#include <string>
#include <vector>

#include "tpurun/board/claims.hpp"
#include "tpurun/tpu/scan.hpp"
#include "tpurun/util/cancel.hpp"

namespace tpurun {

// A job holding the TPU somewhere on the pod, merged across its workers.
struct BoardHolder {
  std::string user;
  long elapsed_s = 0;
  std::string command;
  std::optional<std::string> run_id;
  std::vector<int> workers;
  // Since when every chip of its run has been at 0% duty cycle (the run's
  // watcher records it; see BoardScanner's IdleLookup).
  std::optional<WallClock::time_point> idle_since;
};

struct BoardEntry {
  std::string pod;
  std::string accelerator;   // e.g. "v4-32", when known (board.gcloud)
  std::string gcloud_state;  // READY, PREEMPTED, ...: board.gcloud's TPU VMs, and gcloud pods that are not READY
  std::string gcloud_health;  // " (health UNHEALTHY_MAINTENANCE: ...)", when gcloud says more
  std::string state;  // free, busy, partial, unreachable, error
  std::vector<BoardHolder> holders;
  std::optional<Claim> claim;
  std::vector<WorkerScanResult> workers;
  std::string error;  // the pod could not be loaded or scanned at all
  std::vector<std::string> warnings;  // e.g. a claim file that counts for nothing
};

// free: every worker free. busy: every worker held (by anyone, or a stale
// lock). partial: some held, or some not visible without sudo.
// unreachable: a worker could not be reached (and none is held). error: a scan failed.
std::string pod_state(const std::vector<WorkerScanResult>& workers);
std::vector<BoardHolder> pod_holders(const std::vector<WorkerScanResult>& workers);

// 130 after Ctrl-C, 1 when a pod is in state `error`, else 0.
int board_exit_code(const std::vector<BoardEntry>& entries, const CancelToken& cancel);

}  // namespace tpurun

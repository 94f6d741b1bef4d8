#pragma once
// stage's preflight: before staging and launching, make sure the selected
// workers' TPUs are free — never start a job beside someone else's.
#include <stdexcept>
#include <string>
#include <vector>

#include "tpurun/fanout/printer.hpp"
#include "tpurun/pod/pod.hpp"
#include "tpurun/tpu/scan.hpp"
#include "tpurun/transport/context.hpp"
#include "tpurun/transport/transport.hpp"

namespace tpurun {

struct PreflightOptions {
  bool kill_previous = false;  // first kill the caller's own jobs (like `tpurun kill`)
  int fanout = 64;
  // This host's uid and gid for the caller: a worker where the same user has
  // other numbers refuses (NFS owns files by number). -1: not checked.
  int local_uid = -1;
  int local_gid = -1;
};

// Scans the workers (one connection each). A worker where the caller has
// another uid or gid than here refuses first (UidMismatch, with the fixes);
// then busy-other and busy-self refuse (std::runtime_error naming owners and
// what to do), a stale lock is cleaned under kill's rule, unreachable workers
// refuse, partial views warn and go on.
class UidMismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void run_preflight(const PodConfig& pod, const std::vector<Worker>& workers, Transport& transport,
                   const PreflightOptions& options, LinePrinter& printer, Context& ctx);

}  // namespace tpurun

#pragma once
// stage's preflight: before staging and launching, make sure the selected
// workers' TPUs are free — never start a job beside someone else's.
#include <vector>

#include "tpurun/context.hpp"
#include "tpurun/pod.hpp"
#include "tpurun/printer.hpp"
#include "tpurun/transport.hpp"

namespace tpurun {

struct PreflightOptions {
  bool kill_previous = false;  // first kill the caller's own jobs (like `tpurun kill`)
  int fanout = 64;
};

// Scans the workers (one connection each). busy-other and busy-self refuse
// (std::runtime_error naming owners and what to do), a stale lock is cleaned under
// kill's rule, unreachable workers refuse, partial views warn and go on.
void run_preflight(const PodConfig& pod, const std::vector<Worker>& workers, Transport& transport,
                   const PreflightOptions& options, LinePrinter& printer, Context& ctx);

}  // namespace tpurun

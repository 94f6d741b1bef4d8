#pragma once
// A pod's scan results for board tests: one worker per state; busy-other
// workers run bob's train.py of run-1.
#include "../tpu/scan_fixtures.hpp"
#include "fake_transport.hpp"
#include "tpurun/tpu/scan.hpp"

namespace tpurun::testing {

inline std::vector<WorkerScanResult> pod(const std::vector<TpuState>& states) {
  auto workers = make_workers(static_cast<int>(states.size()));
  std::vector<WorkerScanResult> out;
  for (size_t i = 0; i < states.size(); ++i) {
    LockScan s = empty_scan();
    if (states[i] == TpuState::busy_other) {
      s.holders.push_back(holder(proc(4000 + static_cast<int>(i), 1002, 4000, 1, "python3 /home/bob/train.py", "run-1")));
    }
    WorkerScanResult r{workers[i], states[i], std::nullopt, ""};
    if (states[i] != TpuState::unreachable && states[i] != TpuState::error) r.scan = s;
    if (states[i] == TpuState::unreachable) r.error = "connection refused";
    out.push_back(r);
  }
  return out;
}

}  // namespace tpurun::testing

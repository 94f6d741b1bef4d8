#pragma once
// How `tpurun status` (and kill's result) shows the workers' TPU states.
#include <string>
#include <vector>

#include "tpurun/tpu/scan.hpp"

namespace tpurun {

// The terminal view: identical rows grouped by worker set, then every other
// user's job with user, pid, age and command, then notes with fixes.
std::string format_status_table(const std::string& pod_name, const std::vector<WorkerScanResult>& results,
                                bool color);
// Just the rows: one per group of workers with the same state and detail.
std::string format_state_rows(const std::vector<WorkerScanResult>& results, bool color);

}  // namespace tpurun

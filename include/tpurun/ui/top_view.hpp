#pragma once
// How `tpurun top` shows a look at the pod: the summary line, one row per
// worker and chip with the holder beside the figures, and the --json form.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tpurun/tpu/top_look.hpp"

namespace tpurun {

// "sim: duty cycle mean 61.3%, min 0.0% on w3 (127.0.1.4) · HBM 84.4 of 127.0 GiB
//  · 4 of 4 workers with a TPU workload"
std::string format_top_summary(const std::string& pod, const TopSummary& summary);

// The header row, then per worker a row per chip; the worker, its state and
// its holders on its first row. A worker without figures gets one row that
// says why: "no TPU workload", unreachable, the service's error.
std::vector<std::string> format_top_rows(const std::vector<WorkerLook>& looks);

// The whole text view (summary, blank line, rows), as `top` prints it once.
std::string format_top(const std::string& pod, const std::vector<WorkerLook>& looks);

// {"pod", "summary": {...}, "workers": [{worker, host, state, holders,
// "metrics": "figures"|"no_workload"|"error", chips, notes, error}]}
nlohmann::json top_to_json(const std::string& pod, const std::vector<WorkerLook>& looks);

}  // namespace tpurun

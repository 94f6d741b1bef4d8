#pragma once
// How status and kill show TPU holders: one-line descriptions people can act
// on ("bob 4242 2h13m python3 train.py") and their JSON forms.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tpurun/tpu/holders.hpp"
#include "tpurun/tpu/scan.hpp"
#include "tpurun/util/text.hpp"

namespace tpurun {

// "bob  4242  2h13m  python3 train.py --forever  (+2 in its group)"
std::string job_text(const HolderJob& job, size_t command_width);

// "free" in green, "busy-other" in red, ... when color is on.
std::string paint_state(TpuState state, bool color, size_t pad = 0);

nlohmann::json process_to_json(const ScannedProcess& p);
// The per-worker record of `tpurun status --json`.
nlohmann::json scan_result_to_json(const WorkerScanResult& result);

}  // namespace tpurun

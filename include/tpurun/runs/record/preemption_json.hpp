#pragma once
// A preemption record as state.json and `runs --json` show it.
#include <nlohmann/json.hpp>

#include "tpurun/runs/record/run_state.hpp"

namespace tpurun {

nlohmann::json preemption_to_json(const Preemption& p);
// Missing fields (a state.json of an older tpurun) keep their defaults.
Preemption preemption_from_json(const nlohmann::json& j);

}  // namespace tpurun

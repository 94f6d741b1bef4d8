#pragma once
// How `tpurun runs` shows runs: one row per run with its verdict and its
// workers' states (or, for runs made before the watcher, their job states),
// a line per preemption, and the JSON of --json.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "tpurun/runs/watcher/recent_runs.hpp"

namespace tpurun {

// "failed: w3 exited 3 first", "running (attempt 2 of 3)", "running, UNWATCHED ...".
std::string verdict_text(const RunView& run);
// "preempted <when>: TPU VM x PREEMPTED (attempt 1); recreated (id 1 → 2), down 41s, resumed as attempt 2".
std::string preemption_text(const Preemption& p);
nlohmann::json run_to_json(const RunView& run);
void print_runs_table(std::FILE* out, const std::vector<RunView>& runs);

}  // namespace tpurun

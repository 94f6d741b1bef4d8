#pragma once
// A run whose watcher is gone (killed, its dev VM restarted, or it could not
// write on a full logs root) still has its records: every worker's exit
// record and the stop marker. When they settle the attempt, the verdict is
// the one the watcher would have written, by the same gang rule (gang.hpp),
// so that `runs`, `kill --run` and `gc` need no watcher to know a run ended.
#include <optional>
#include <string>

#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/runs/record/run_state.hpp"

namespace tpurun {

// The final state the records give `last` (the unwatched state.json), or
// nullopt while a worker of its attempt has no exit record (its job may
// still run). No restart is counted: without a watcher none was made.
std::optional<RunState> verdict_from_records(const RunRecord& record, const RunState& last);

// May a job of this run still be running (or about to be restarted)? False
// when its state is final, or when no watcher is alive and its records
// settle it; for a run without a state.json (an older tpurun's), when every
// worker has an exit record. gc keeps the snapshots of active runs.
bool run_is_active(const std::string& log_dir);

}  // namespace tpurun

#pragma once
// A run whose watcher is gone (killed, its dev VM restarted, or it could not
// write on a full logs root) still has its records: every worker's exit
// record and the stop marker. When they settle the attempt, the verdict is
// the one the watcher would have written, by the same gang rule (gang.hpp),
// so that `runs`, `kill --run` and `gc` need no watcher to know a run ended.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/staging/gc.hpp"
#include "tpurun/util/cancel.hpp"

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

// gc's input: snapshot name -> the user's runs that may still use it
// (run_is_active). A squatted logs dir throws UnsafeDirError, and gc stops.
std::map<std::string, std::vector<SnapshotUser>> snapshots_in_use(const std::string& logs_root,
                                                                 const std::string& user);

// gc on a pod without a shared mount: the user's runs ("PROJECT/RUN") whose
// copies on the workers' disks may go: ended (run_is_active says no), and
// their copy here whole (no logs_missing in state.json). A running run, one
// whose copy here lacks something (the worker's may be the only one), and
// one this host does not have are not among them.
std::vector<std::string> runs_copied_whole(const std::string& logs_root, const std::string& user);

// kill --run, on a run whose watcher is not alive: once its jobs are gone
// (their wrappers write the exit records as they end; waited for up to
// 20 s), the verdict is recorded in its state.json, "stopped by tpurun kill".
// Returns what to tell the user; "" for a run with a watcher or a verdict.
std::string record_unwatched_stop(const std::string& run_dir, const CancelToken& cancel);

}  // namespace tpurun

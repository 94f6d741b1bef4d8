#pragma once
// `tpurun runs`: the user's recent runs as their log dirs record them, each
// with its one verdict (the watcher's state.json, or the exit records' when
// no watcher is alive: records_verdict.hpp) and, for runs made before the
// watcher existed, every worker's job, checked on the workers.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/transport/context.hpp"

namespace tpurun {

struct RunView {
  RunRecord record;
  std::vector<WorkerJob> jobs;     // runs made before the watcher existed
  std::optional<RunState> state;   // the watcher's view: one verdict, a state per worker
  bool watched = false;
  // No watcher was alive, and the exit records and stop marker gave the
  // verdict (watcher/records_verdict): "finished, not watched".
  bool from_records = false;
};

// The newest `limit` runs of `user` under `logs_root`, newest first. A run
// whose records cannot be read is skipped, and said to `warn`, as is a
// state.json that cannot be read (its job records are shown instead).
std::vector<RunView> recent_runs(const std::string& logs_root, const std::string& user, int limit,
                                 const std::function<void(const std::string&)>& warn);

// Jobs with a pid and no exit record are "running" only if their worker says
// so: dead ones become "lost", unreachable or unknown pods "unknown". A pod
// that cannot be loaded is said to `warn`, once.
void check_liveness(std::vector<RunView>& runs, Context& ctx, int fanout,
                    const std::function<void(const std::string&)>& warn);

}  // namespace tpurun

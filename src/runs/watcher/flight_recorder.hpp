#pragma once
// The flight recorder (docs/stacks.md): before the watcher stops a run's
// jobs (a stall with --on-stall stop|restart, or a gang's failure), the
// stacks of the workers that still answer, taken within a few seconds and
// saved in the run's log dir (runs/stacks: stacks/<time>-<reason>/), where
// `tpurun stacks RUN` prints them once the run has ended. With no shared
// mount the watcher writes them into its own log dir: they are home already.
#include <string>
#include <vector>

#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/transport/transport.hpp"

namespace tpurun {

// What to say (watcher.log, the failure's detail): where the capture is, or
// why there is none. `skip` is a worker that is known gone (the lost one).
std::string record_flight(const RunRecord& record, const std::vector<Worker>& workers, int skip,
                          const std::string& reason, Transport& transport, int fanout, const CancelToken& cancel);

}  // namespace tpurun

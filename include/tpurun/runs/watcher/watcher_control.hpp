#pragma once
// Starting a run's watcher (a detached `tpurun _watcher LOG_DIR` on the dev
// VM), and telling watchers that their runs are being stopped on purpose:
// before `tpurun kill` signals a run's jobs, its watcher must hear of it, or
// it would restart the run or report the kill as a failure.
#include <string>

#include "tpurun/fanout/printer.hpp"
#include "tpurun/pod/pod.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/transport/context.hpp"

namespace tpurun {

// Starts the run's watcher, detached, with the config and pod this command
// used. Returns its pid, or throws.
int start_watcher(const RunRecord& run, Context& ctx);

// kill --run RUN (`run` not empty): that run's watcher, if RUN is one of
// `user`'s recorded runs. A kill of all the user's jobs on the whole pod: the
// watchers of all their active runs on it (or on the same hosts under another
// pod name). Each watcher gets a stop marker and, when it runs here, SIGTERM.
void stop_watchers(const Target& target, const std::string& run, const std::string& user,
                   LinePrinter& printer);

}  // namespace tpurun

#pragma once
// Before `tpurun kill` signals a run's jobs, its watcher must hear of it, or
// it would restart the run or report the kill as a failure.
#include <string>

#include "tpurun/pod.hpp"
#include "tpurun/printer.hpp"

namespace tpurun {

// kill --run RUN (`run` not empty): that run's watcher, if RUN is one of
// `user`'s recorded runs. A kill of all the user's jobs on the whole pod: the
// watchers of all their active runs on it (or on the same hosts under another
// pod name). Each watcher gets a stop marker and, when it runs here, SIGTERM.
void stop_run_watchers(const Target& target, const std::string& run, const std::string& user,
                       LinePrinter& printer);

}  // namespace tpurun

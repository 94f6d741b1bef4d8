#pragma once
// Starting a run's watcher (a detached `tpurun _watcher LOG_DIR` on the dev
// VM) and what it needs once started, and telling watchers that their runs are being stopped on purpose:
// before `tpurun kill` signals a run's jobs, its watcher must hear of it, or
// it would restart the run or report the kill as a failure.
#include <functional>
#include <string>

#include "tpurun/fanout/printer.hpp"
#include "tpurun/pod/pod.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/runs/watcher/watcher.hpp"
#include "tpurun/transport/context.hpp"

namespace tpurun {

// Starts the run's watcher, detached, with the config and pod this command
// used. Returns its pid, or throws. `launching_fd`, when given, becomes the
// watcher's stdin: the read end of a pipe that the stage closes once its
// launch is answered (or it dies); until then (at most 10 s) the watcher
// opens no SSH connection, so its handshakes do not slow the launch.
int start_watcher(const RunRecord& run, Context& ctx, int launching_fd = -1);

// The started watcher's side. What it needs to watch `record`'s run: the pod
// (only its records, when the TPU VM is preempted or gone: the message goes to
// `say`), the kept --env values, where a recreated VM's describe is kept.
WatcherSetup watcher_setup(RunRecord record, Context& ctx, const std::function<void(const std::string&)>& say);
// Returns once the launch is answered (stdin, start_watcher's pipe, closed),
// or after 10 s; at once for a watcher started with /dev/null there (`logs -f`).
void wait_for_launch();

// kill --run RUN (`run` not empty): that run's watcher, if RUN is one of
// `user`'s recorded runs. A kill of all the user's jobs on the whole pod: the
// watchers of all their active runs on it (or on the same hosts under another
// pod name). Each watcher gets a stop marker and, when it runs here, SIGTERM.
void stop_watchers(const Target& target, const std::string& run, const std::string& user,
                   LinePrinter& printer);

}  // namespace tpurun

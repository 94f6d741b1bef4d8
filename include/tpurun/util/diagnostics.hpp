#pragma once
// tpurun's own log lines, through spdlog:
//  - diagnostics (-v): on stderr, each line with time and pid, what tpurun
//    resolved and did (the config file, the pod, its workers, SSH settings,
//    gcloud's answer); -vv adds libssh's protocol log in the same format.
//    Quiet without -v. Call sites use spdlog::debug(...).
//  - the run's watcher log (watcher.log is its stdout): one line per
//    event, "2024-04-19T00:08:59Z text" in UTC, flushed at once, which
//    `stage` and `logs -f` print as "watcher: text".
// One thread-safe sink each, so lines from the fan-out's threads never
// interleave.
#include <spdlog/logger.h>

namespace tpurun {

// Installs the diagnostics logger as spdlog's default: debug level with -v,
// trace with -vv, off otherwise.
void init_diagnostics(int verbosity);
// -v: this process's peak resident memory (its child processes, git and
// ssh, apart), for the benches' memory targets.
void log_peak_memory();

spdlog::logger& watcher_log();

}  // namespace tpurun

#pragma once
// Following a run to its end (stage and logs -f), and starting its watcher.
#include <string>
#include <vector>

#include "tpurun/context.hpp"
#include "tpurun/printer.hpp"
#include "tpurun/run_record.hpp"
#include "tpurun/run_state.hpp"

namespace tpurun {

// Starts the run's supervisor, detached (`tpurun _supervise LOG_DIR`), with the
// config and pod this command used. Returns its pid, or throws.
int start_watcher(const RunRecord& run, Context& ctx);

// Tails the workers' logs (only `workers`) until the run's verdict is final;
// prints one summary; returns the run's exit code. On Ctrl-C it detaches (the
// jobs keep running), says how to reattach and stop, and returns 130.
int follow_to_end(const RunRecord& run, const std::vector<Worker>& workers, LinePrinter& printer, Context& ctx,
                  bool raw = false);

// sysexits' EX_TEMPFAIL: the run's TPU VM was preempted; creating it again
// and staging again may well work.
constexpr int kPreemptedExitCode = 75;

// 0 succeeded; the first failing worker's exit code (128+N for a signal);
// 255 when it was lost; 143 when the run was stopped by `tpurun kill`; 75
// when its TPU VM was preempted.
int run_exit_code(const RunState& state);

// Where a run's --env values are kept on this host for its watcher.
std::string run_env_dir(const Context& ctx);

}  // namespace tpurun

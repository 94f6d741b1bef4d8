#pragma once
// Following a run from the dev VM (stage and logs -f): every worker's log
// (log_tail.hpp) and the watcher's notes, until the watcher's state.json says
// the run has ended; then one summary and the run's exit code.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/fanout/printer.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/transport/context.hpp"
#include "tpurun/util/cancel.hpp"
#include "tpurun/util/file_watch/file_watch.hpp"

namespace tpurun {

struct FollowResult {
  std::optional<RunState> state;  // the last state seen (final unless interrupted)
  bool interrupted = false;       // Ctrl-C: the jobs keep running
};

struct FollowHooks {
  bool raw = false;  // print every line as it comes (no collapsing)
  // Called when the run has no live watcher (it died, or never started);
  // returns false when it could not start one.
  std::function<bool()> watch_again;
  // How to notice that the logs grew (TPURUN_FOLLOW_WATCH; file_watch.hpp).
  WatchMethod watch_method = WatchMethod::automatic;
};

// Tails the run until the watcher records a final verdict, or Ctrl-C.
// It reads only the files that a FileWatch reports changed, and reads
// state.json only when it changed, so that following an idle run costs
// about nothing with inotify, and one statx per file per 0.8 s on NFS.
FollowResult follow_logs(const std::string& log_dir, const std::vector<Worker>& workers, LinePrinter& printer,
                         const CancelToken& cancel, const FollowHooks& hooks);

// Tails the workers' logs (only `workers`) until the run's verdict is final,
// starting a watcher when the run has none; prints one summary; returns the
// run's exit code. On Ctrl-C it detaches (the jobs keep running), says how to
// reattach and stop, and returns 130.
int follow_to_end(const RunRecord& run, const std::vector<Worker>& workers, LinePrinter& printer, Context& ctx,
                  bool raw = false);

// sysexits' EX_TEMPFAIL: the run's TPU VM was preempted; creating it again
// and staging again may well work.
constexpr int kPreemptedExitCode = 75;

// 0 succeeded; the first failing worker's exit code (128+N for a signal);
// 255 when it was lost; 143 when the run was stopped by `tpurun kill`; 75
// when its TPU VM was preempted.
int run_exit_code(const RunState& state);

}  // namespace tpurun

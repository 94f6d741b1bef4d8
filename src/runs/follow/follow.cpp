// Following a run to its end: the loop (follow_loop.cpp), a watcher started
// again when the run has none, and the summary the run ends with.
#include "tpurun/runs/follow/follow.hpp"

#include <fmt/format.h>

#include <ctime>

#include "runs/record/log_dir_layout.hpp"
#include "runs/watcher/gang.hpp"
#include "tpurun/runs/follow/log_tail.hpp"
#include "tpurun/runs/watcher/watcher_control.hpp"
#include "tpurun/util/text.hpp"

namespace tpurun {
namespace {

const Worker* find_worker(const RunRecord& run, int index) {
  for (const Worker& w : run.workers) {
    if (w.index == index) return &w;
  }
  return nullptr;
}

std::string worker_name(const RunRecord& run, int index) {
  const Worker* w = find_worker(run, index);
  return w ? w->display() : fmt::format("w{}", index);
}

void print_summary(const RunRecord& run, const RunState& s, LinePrinter& printer) {
  for (const MissingLogs& m : s.logs_missing) printer.note(missing_logs_text(m));
  size_t ok = 0;
  for (const WorkerStatus& w : s.workers) ok += w.state == WorkerState::succeeded ? 1 : 0;
  const std::string attempts =
      s.max_attempts > 1 ? fmt::format(" (attempt {} of {})", s.attempt, s.max_attempts) : std::string();
  if (s.verdict == RunVerdict::succeeded) {
    printer.note(fmt::format("run {} succeeded{}: {} exited 0", run.run_id, attempts,
                             s.workers.size() == 1 ? "its worker" : fmt::format("all {} workers", s.workers.size())));
    return;
  }
  if (s.verdict == RunVerdict::preempted) {
    const Preemption* last = s.preemptions.empty() ? nullptr : &s.preemptions.back();
    printer.note(fmt::format("run {} ended: its TPU VM is gone{}: {}", run.run_id, attempts,
                             last ? last->detail : "preempted"));
    if (last && !last->why.empty() && last->why != "no --recreate") {
      printer.note(fmt::format("  not recreated: {}", last->why));
    } else {
      printer.note("  it never comes back by itself: delete it and create it again (or stage with --recreate), "
                   "then stage the run again; its logs stay readable (tpurun logs " + run.run_id + ")");
    }
    return;
  }
  if (s.verdict == RunVerdict::stopped) {
    printer.note(fmt::format("run {} was stopped{} ({} of {} had exited 0)", run.run_id, attempts, ok,
                             s.workers.size()));
    return;
  }
  printer.note(fmt::format("run {} {}{}", run.run_id, to_string(s.verdict), attempts));
  if (s.first_failure) {
    const GangFailure& f = *s.first_failure;
    std::string how = f.how == "lost" ? fmt::format("was lost (since {}): {}", f.since, f.detail)
                                      : f.detail + (f.at.empty() ? "" : " at " + f.at);
    if (f.how == "stalled") {
      printer.note(fmt::format("the run {} (on stall: {})", how, run.gang.on_stall));
    } else if (f.how == "out_of_space") {
      printer.note(fmt::format("the run failed: {}", f.detail));
    } else {
      printer.note(fmt::format("first failure: {} {}", worker_name(run, f.worker), how));
    }
    if (f.how == "exit" || f.how == "signal") {
      const auto lines = last_lines(worker_log_path(run.log_dir, f.worker), 20);
      printer.note(fmt::format("last {} lines of {}'s log{}", lines.size(), worker_name(run, f.worker),
                               lines.empty() ? " (it printed nothing)" : ":"));
      const Worker* w = find_worker(run, f.worker);
      for (const std::string& line : lines) {
        if (w) printer.worker_line(*w, Stream::err, line);
      }
    }
  }
  if (s.stopped_others) {
    printer.note(fmt::format("tpurun stopped the run's jobs on the other workers (on failure: {})", s.on_failure));
  }
  for (const WorkerStatus& w : s.workers) {
    if (w.state != WorkerState::succeeded) {
      printer.note(fmt::format("  {}: {}{}", worker_name(run, w.worker), to_string(w.state),
                               w.detail.empty() ? "" : " — " + w.detail));
    }
  }
}

}  // namespace

int run_exit_code(const RunState& s) {
  switch (s.verdict) {
    case RunVerdict::succeeded: return 0;
    case RunVerdict::stopped: return 143;
    case RunVerdict::lost: return 255;
    case RunVerdict::preempted: return kPreemptedExitCode;
    case RunVerdict::cancelled: return 130;
    case RunVerdict::failed:
      if (!s.first_failure) return 1;
      if (s.first_failure->how == "lost") return 255;
      return s.first_failure->exit_code == 0 ? 1 : s.first_failure->exit_code;
    case RunVerdict::running:
    case RunVerdict::restarting: break;
  }
  return 1;
}

int follow_to_end(const RunRecord& run, const std::vector<Worker>& workers, LinePrinter& printer, Context& ctx,
                  bool raw) {
  FollowHooks hooks;
  hooks.raw = raw;
  if (auto method = ctx.env.get("TPURUN_FOLLOW_WATCH")) {
    if (!parse_watch_method(*method, hooks.watch_method)) {
      // A note, not an error: for stage the jobs have started by now.
      printer.note(fmt::format("TPURUN_FOLLOW_WATCH={} is not auto, inotify or poll; following with auto", *method));
    }
  }
  hooks.watch_again = [&] {
    try {
      start_watcher(run, ctx);
      return true;
    } catch (const std::exception& e) {
      printer.note(e.what());
      return false;
    }
  };
  FollowResult result = follow_logs(run.log_dir, workers, printer, ctx.cancel, hooks);
  if (result.interrupted) {
    const bool watched = result.state && watcher_alive(*result.state, static_cast<long long>(std::time(nullptr)));
    printer.note(fmt::format("detached from run {}; its jobs keep running{}", run.run_id,
                             watched ? ", and tpurun still watches them."
                                     : ", but no watcher runs for it (`tpurun logs RUN -f` starts one)."));
    printer.note(fmt::format("  reattach: tpurun logs {} -f", run.run_id));
    printer.note(fmt::format("  stop:     tpurun kill --run {}", run.run_id));
    return interrupt_exit_code();
  }
  print_summary(run, *result.state, printer);
  return run_exit_code(*result.state);
}

}  // namespace tpurun

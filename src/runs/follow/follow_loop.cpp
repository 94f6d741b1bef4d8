// follow_logs: the loop behind `stage` and `logs -f`. It sleeps in a FileWatch
// until a log, watcher.log or state.json changes, and reads only those.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "runs/record/log_dir_layout.hpp"
#include "tpurun/runs/watcher/records_verdict.hpp"
#include "tpurun/runs/follow/follow.hpp"
#include "tpurun/runs/follow/log_tail.hpp"
#include "tpurun/util/unique_fd.hpp"

namespace tpurun {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// After output, wake often enough to let collapsed lines go when their window
// ends (it can be held up to 2 s); otherwise twice a second, for Ctrl-C and
// the status line.
constexpr auto kBusyWake = 100ms;
constexpr auto kIdleWake = 500ms;
constexpr auto kBusyFor = 2s;

// The watcher's log lines ("<time> text") become tpurun notes.
class WatcherNotes {
 public:
  WatcherNotes(std::string path, LinePrinter& printer) : path_(std::move(path)), printer_(printer) {}

  // Prints the lines appended since the last call.
  void drain() {
    if (!fd_) fd_.reset(::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd_) return;  // not created yet
    char buf[65536];
    ssize_t n;
    while ((n = ::pread(fd_.get(), buf, sizeof buf, offset_)) > 0) {
      pending_.append(buf, static_cast<size_t>(n));
      offset_ += n;
    }
    size_t nl;
    while ((nl = pending_.find('\n')) != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      size_t space = line.find(' ');
      if (space != std::string::npos && line.size() > 20 && line[4] == '-') line.erase(0, space + 1);
      printer_.note("watcher: " + line);
    }
  }

 private:
  std::string path_;
  LinePrinter& printer_;
  UniqueFd fd_;
  long long offset_ = 0;
  std::string pending_;
};

constexpr int kMaxWatcherRestarts = 3;

// The verdict the exit records give a run whose watcher is gone; with no
// state.json at all (no watcher ever wrote one), that of its first attempt.
std::optional<RunState> settle_from_records(const std::string& log_dir, const std::optional<RunState>& last) {
  if (last && is_final(last->verdict)) return std::nullopt;
  try {
    return verdict_from_records(read_run_record(log_dir), last.value_or(RunState{}));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

long long unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Only in the last attempt: a restarted worker prints again.
void note_ended_workers(const RunState& state, LogTail& follower) {
  if (state.verdict != RunVerdict::running || state.attempt < state.max_attempts) return;
  for (const WorkerStatus& w : state.workers) {
    if (w.state == WorkerState::succeeded || w.state == WorkerState::failed || w.state == WorkerState::lost ||
        w.state == WorkerState::stopped) {
      follower.ended(w.worker, w.state == WorkerState::succeeded);
    }
  }
}

}  // namespace

FollowResult follow_logs(const std::string& log_dir, const std::vector<Worker>& workers, LinePrinter& printer,
                         const CancelToken& cancel, const FollowHooks& hooks) {
  LiveOutputOptions options;
  options.collapse = !hooks.raw;
  // Over NFS one worker's data can show up a moment after its peers'.
  options.collapse_options.window = std::chrono::seconds(1);
  LiveOutput live(printer, workers, options);
  LogTail follower(log_dir, workers, live);
  WatcherNotes notes(watcher_log_path(log_dir), printer);

  // Ids 0..n-1 are the workers' logs, in order.
  auto watch = make_file_watch(log_dir, hooks.watch_method);
  for (const std::string& name : follower.file_names()) watch->add(name);
  const int notes_id = watch->add(watcher_log_name(log_dir));
  const int state_id = watch->add(kStateJson);
  const int logs = notes_id;

  FollowResult result;
  auto last_output = Clock::now();
  auto next_alive_check = Clock::now();
  int restarts = 0;
  auto unwatched_since = Clock::now();
  bool unwatched = false;
  std::vector<int> changed;  // the first pass reads everything
  bool everything = true;
  std::vector<int> all_logs(static_cast<size_t>(logs));
  for (int i = 0; i < logs; ++i) all_logs[static_cast<size_t>(i)] = i;
  for (;;) {
    // The logs that changed, and those the last pass left unfinished.
    std::vector<int> logs_changed = everything ? all_logs : follower.behind();
    bool notes_changed = everything, state_changed = everything;
    for (int id : changed) {
      if (id < logs && std::find(logs_changed.begin(), logs_changed.end(), id) == logs_changed.end()) {
        logs_changed.push_back(id);
      }
      notes_changed = notes_changed || id == notes_id;
      state_changed = state_changed || id == state_id;
    }
    if (!logs_changed.empty() && follower.drain(logs_changed)) last_output = Clock::now();
    if (notes_changed) notes.drain();
    if (state_changed) {
      if (auto state = read_run_state(log_dir)) result.state = std::move(state);
      if (result.state) note_ended_workers(*result.state, follower);
    }
    everything = false;
    if (result.state && is_final(result.state->verdict)) break;
    // Held lines wait while output is still unread: it may hold their peers' copies.
    if (follower.behind().empty()) live.tick();
    if (cancel.cancelled()) {
      result.interrupted = true;
      break;
    }
    // No live watcher for a while (it was killed, its host restarted, or it
    // could not write on a full logs root): when the records settle the run,
    // that is the end; otherwise a watcher is started again, a few times.
    if (Clock::now() >= next_alive_check) {
      next_alive_check = Clock::now() + 1s;
      const bool watched = result.state && watcher_alive(*result.state, unix_now());
      if (watched) {
        unwatched = false;
      } else if (!unwatched) {
        unwatched = true;
        unwatched_since = Clock::now();
      } else if (Clock::now() - unwatched_since > 3s) {
        // With no state.json yet, a watcher may still be starting (a slow
        // host) and about to restart a failed attempt: the records alone
        // decide only once no watcher could be kept up.
        const bool may_settle = result.state || restarts > kMaxWatcherRestarts;
        if (auto settled = may_settle ? settle_from_records(log_dir, result.state) : std::nullopt) {
          result.state = std::move(settled);
          printer.note("the run has no watcher, and every worker's exit record is there: the verdict is theirs");
          break;
        }
        if (hooks.watch_again && restarts < kMaxWatcherRestarts) {
          ++restarts;
          printer.note("this run has no watcher (it was stopped or died): starting one");
          if (!hooks.watch_again()) printer.note("could not start a watcher; following the logs only");
        } else if (restarts == kMaxWatcherRestarts) {
          ++restarts;
          printer.note(fmt::format("no watcher stays up for this run (see {}); following the logs only, until every "
                                   "worker's exit record is there", watcher_log_path(log_dir)));
        }
        unwatched = false;
        unwatched_since = Clock::now() + 30s;
      }
    }
    // A job that prints faster than one pass reads: go on reading at once.
    const auto wake = !follower.behind().empty()             ? 0ms
                      : Clock::now() - last_output < kBusyFor ? kBusyWake
                                                              : kIdleWake;
    changed = watch->wait(std::chrono::duration_cast<std::chrono::milliseconds>(wake));
  }
  follower.finish();
  notes.drain();
  return result;
}

}  // namespace tpurun

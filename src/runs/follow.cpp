#include "tpurun/follow.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sstream>
#include <thread>

#include "tpurun/fanout.hpp"

namespace tpurun {
namespace {

using namespace std::chrono_literals;

// The supervisor's log lines ("<time> text") become tpurun notes.
class WatcherNotes : public OutputSink {
 public:
  explicit WatcherNotes(LinePrinter& printer) : printer_(printer) {}
  void write(Stream, std::string_view data) override {
    pending_.append(data);
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
  LinePrinter& printer_;
  std::string pending_;
};

// Reads what was appended to `path` since `offset` into `sink`.
void drain_file(const std::string& path, int& fd, long long& offset, OutputSink& sink) {
  if (fd < 0) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return;  // not created yet
  char buf[65536];
  ssize_t n;
  while ((n = ::pread(fd, buf, sizeof buf, offset)) > 0) {
    sink.write(Stream::out, std::string_view(buf, static_cast<size_t>(n)));
    offset += n;
  }
}

long long unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::map<int, std::map<int, bool>> pids_alive(Transport& transport, const std::vector<Worker>& workers,
                                              const PidsByWorker& pids, int fanout, const CancelToken& cancel) {
  FanoutPlan plan;
  for (const Worker& w : workers) {
    if (pids.count(w.index)) plan.workers.push_back(w);
  }
  plan.fanout = fanout;
  plan.capture = true;
  plan.command_for = [&pids](const Worker& w) {
    return RemoteCommand{fmt::format("for p in {}; do if [ -d /proc/$p ]; then echo \"$p 1\"; else echo \"$p 0\"; fi; done",
                                     fmt::join(pids.at(w.index), " ")),
                         "", 15000};
  };
  std::map<int, std::map<int, bool>> alive;
  for (const WorkerOutcome& o : run_on_workers(plan, transport, {}, cancel)) {
    if (!o.ok()) continue;
    std::istringstream lines(o.out);
    int pid = 0, state = 0;
    auto& row = alive[o.worker.index];
    while (lines >> pid >> state) row[pid] = state == 1;
  }
  return alive;
}

LogFollower::LogFollower(std::string log_dir, std::vector<Worker> workers, LiveOutput& live)
    : log_dir_(std::move(log_dir)), live_(live) {
  for (Worker& w : workers) tails_.push_back(Tail{w, worker_log_path(log_dir_, w.index), -1, 0, false});
}

LogFollower::~LogFollower() {
  for (Tail& tail : tails_) {
    if (tail.fd >= 0) ::close(tail.fd);
  }
}

bool LogFollower::drain_once() {
  bool any = false;
  char buf[65536];
  for (Tail& tail : tails_) {
    if (tail.fd < 0) tail.fd = ::open(tail.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (tail.fd < 0) continue;  // not created yet
    ssize_t n = ::pread(tail.fd, buf, sizeof buf, tail.offset);
    if (n <= 0) continue;
    live_.sink(tail.worker.index).write(Stream::out, std::string_view(buf, static_cast<size_t>(n)));
    tail.offset += n;
    any = true;
  }
  return any;
}

void LogFollower::drain() {
  while (drain_once()) {
  }
}

void LogFollower::ended(int worker_index, bool ok) {
  for (Tail& tail : tails_) {
    if (tail.worker.index != worker_index || tail.ended) continue;
    tail.ended = true;
    drain();
    live_.set_state(worker_index, ok ? WorkerRunState::exited : WorkerRunState::failed);
    live_.sink(worker_index).flush();
  }
}

void LogFollower::finish() {
  drain();
  live_.finish();
}

FollowResult follow_run(const std::string& log_dir, const std::vector<Worker>& workers, LinePrinter& printer,
                        const CancelToken& cancel, const FollowHooks& hooks) {
  LiveOutputOptions options;
  options.collapse = !hooks.raw;
  // Over NFS one worker's data can show up a moment after its peers'.
  options.collapse_options.window = std::chrono::seconds(1);
  LiveOutput live(printer, workers, options);
  LogFollower follower(log_dir, workers, live);
  WatcherNotes notes(printer);
  int notes_fd = -1;
  long long notes_offset = 0;
  FollowResult result;
  auto unwatched_since = std::chrono::steady_clock::now();
  bool unwatched = false;
  for (;;) {
    follower.drain();
    drain_file(log_dir + "/supervisor.log", notes_fd, notes_offset, notes);
    result.state = read_run_state(log_dir);
    // Only in the last attempt: a restarted worker prints again.
    if (result.state && result.state->verdict == RunVerdict::running &&
        result.state->attempt >= result.state->max_attempts) {
      for (const WorkerStatus& w : result.state->workers) {
        if (w.state == WorkerState::succeeded || w.state == WorkerState::failed || w.state == WorkerState::lost ||
            w.state == WorkerState::stopped) {
          follower.ended(w.worker, w.state == WorkerState::succeeded);
        }
      }
    }
    if (result.state && is_final(result.state->verdict)) break;
    live.tick();
    if (cancel.cancelled()) {
      result.interrupted = true;
      break;
    }
    // No live watcher for a while (it was killed, or the dev VM restarted): start one.
    const bool watched = result.state && supervisor_alive(*result.state, unix_now());
    if (watched) {
      unwatched = false;
    } else if (!unwatched) {
      unwatched = true;
      unwatched_since = std::chrono::steady_clock::now();
    } else if (hooks.watch_again && std::chrono::steady_clock::now() - unwatched_since > 3s) {
      printer.note("this run has no watcher (it was stopped or died): starting one");
      if (!hooks.watch_again()) {
        printer.note("could not start a watcher; following the logs only");
      }
      unwatched = false;
      unwatched_since = std::chrono::steady_clock::now() + 30s;
    }
    std::this_thread::sleep_for(200ms);
  }
  follower.finish();
  drain_file(log_dir + "/supervisor.log", notes_fd, notes_offset, notes);
  if (notes_fd >= 0) ::close(notes_fd);
  return result;
}

std::vector<std::string> last_lines(const std::string& path, size_t n) {
  std::vector<std::string> lines;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return lines;
  off_t size = ::lseek(fd, 0, SEEK_END);
  off_t start = size > 65536 ? size - 65536 : 0;
  std::string text(static_cast<size_t>(size - start), '\0');
  ssize_t got = ::pread(fd, text.data(), text.size(), start);
  ::close(fd);
  if (got <= 0) return lines;
  text.resize(static_cast<size_t>(got));
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  if (start > 0 && !lines.empty()) lines.erase(lines.begin());  // cut mid-line
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<long>(n));
  return lines;
}

}  // namespace tpurun

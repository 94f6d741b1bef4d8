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
                         ""};
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

LogFollower::LogFollower(std::string log_dir, std::vector<Worker> workers, LinePrinter& printer)
    : log_dir_(std::move(log_dir)) {
  tails_.reserve(workers.size());
  for (Worker& w : workers) {
    std::string path = worker_log_path(log_dir_, w.index);
    tails_.push_back(Tail{w, path, 0, PrefixedSink(printer, w)});
  }
}

void LogFollower::drain() {
  char buf[65536];
  for (Tail& tail : tails_) {
    int fd = ::open(tail.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // not created yet
    ssize_t n;
    while ((n = ::pread(fd, buf, sizeof buf, tail.offset)) > 0) {
      tail.sink.write(Stream::out, std::string_view(buf, static_cast<size_t>(n)));
      tail.offset += n;
    }
    ::close(fd);
  }
}

std::vector<WorkerJob> LogFollower::jobs() const {
  std::vector<WorkerJob> jobs;
  for (const Tail& tail : tails_) jobs.push_back(read_worker_job(log_dir_, tail.worker.index));
  return jobs;
}

void LogFollower::flush() {
  for (Tail& tail : tails_) tail.sink.flush();
}

FollowResult follow_run(const std::string& log_dir, const std::vector<Worker>& workers, LinePrinter& printer,
                        Transport& transport, int fanout, const CancelToken& cancel, bool follow) {
  using namespace std::chrono_literals;
  constexpr int kPollsPerLivenessCheck = 25;  // ~5s at 200ms per poll
  LogFollower follower(log_dir, workers, printer);
  std::map<int, int> dead_checks;  // worker -> times its pid was seen dead with no exit record
  FollowResult result;
  for (int poll = 1;; ++poll) {
    follower.drain();
    std::vector<WorkerJob> jobs = follower.jobs();
    PidsByWorker unsure;
    bool done = true;
    for (const WorkerJob& job : jobs) {
      if (job.state == JobState::exited || dead_checks[job.worker] >= 2) continue;
      done = false;
      if (job.pid) unsure[job.worker] = {*job.pid};
    }
    if (done || !follow) break;
    if (cancel.cancelled()) {
      result.interrupted = true;
      break;
    }
    if (poll % kPollsPerLivenessCheck == 0 && !unsure.empty()) {
      auto alive = pids_alive(transport, workers, unsure, fanout, cancel);
      for (const auto& [worker, pids] : unsure) {
        auto row = alive.find(worker);
        bool dead = row != alive.end() && row->second.count(pids[0]) && !row->second.at(pids[0]);
        int& seen = dead_checks[worker];
        seen = dead ? seen + 1 : 0;  // twice in a row: the wrapper had time to write its record
      }
    }
    std::this_thread::sleep_for(200ms);
  }
  follower.drain();
  follower.flush();
  for (const WorkerJob& job : follower.jobs()) {
    WorkerOutcome o;
    for (const Worker& w : workers) {
      if (w.index == job.worker) o.worker = w;
    }
    if (job.state == JobState::exited) {
      o.result = CommandExit{*job.exit_code, std::nullopt};
    } else if (dead_checks[job.worker] >= 2) {
      o.result = TransportError{ErrorKind::channel,
                                "the job ended without an exit record (killed with SIGKILL, or the host rebooted)"};
    } else {
      o.result = TransportError{ErrorKind::interrupted, "still running"};
    }
    result.outcomes.push_back(std::move(o));
  }
  return result;
}

}  // namespace tpurun

#include "tpurun/follow.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <fmt/format.h>
#include <thread>

#include "tpurun/fanout.hpp"

namespace tpurun {

std::vector<std::optional<bool>> jobs_alive(Transport& transport, const std::vector<Worker>& workers,
                                            const std::vector<int>& pids, int fanout,
                                            const CancelToken& cancel) {
  FanoutPlan plan;
  plan.workers = workers;
  plan.fanout = fanout;
  plan.capture = true;
  std::map<int, int> pid_of;
  for (size_t i = 0; i < workers.size(); ++i) pid_of[workers[i].index] = pids[i];
  plan.command_for = [&pid_of](const Worker& w) {
    return RemoteCommand{fmt::format("if [ -d /proc/{0} ]; then echo alive; else echo dead; fi", pid_of.at(w.index)), ""};
  };
  auto outcomes = run_on_workers(plan, transport, {}, cancel);
  std::vector<std::optional<bool>> alive;
  for (const WorkerOutcome& o : outcomes) {
    if (!o.ok()) alive.push_back(std::nullopt);
    else alive.push_back(o.out.find("alive") != std::string::npos);
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

bool LogFollower::all_exited() const {
  for (const WorkerJob& job : jobs()) {
    if (job.state != JobState::exited) return false;
  }
  return true;
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
    std::vector<Worker> unsure;
    std::vector<int> pids;
    bool done = true;
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (jobs[i].state == JobState::exited || dead_checks[jobs[i].worker] >= 2) continue;
      done = false;
      if (jobs[i].pid) unsure.push_back(workers[i]), pids.push_back(*jobs[i].pid);
    }
    if (done || !follow) break;
    if (cancel.cancelled()) {
      result.interrupted = true;
      break;
    }
    if (poll % kPollsPerLivenessCheck == 0 && !unsure.empty()) {
      auto alive = jobs_alive(transport, unsure, pids, fanout, cancel);
      for (size_t i = 0; i < unsure.size(); ++i) {
        int& seen = dead_checks[unsure[i].index];
        seen = (alive[i] == false) ? seen + 1 : 0;  // twice in a row: the wrapper had time to write
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

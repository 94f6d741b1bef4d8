#include "runs/watcher/liveness.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <sstream>

#include "tpurun/fanout/fanout.hpp"
#include "tpurun/transport/shell_quote.hpp"

namespace tpurun {

LivenessProber::LivenessProber(Transport& transport, std::vector<Worker> workers, int fanout,
                               std::chrono::milliseconds every)
    : transport_(transport), workers_(std::move(workers)), fanout_(fanout), every_(every) {
  connections_.resize(workers_.size());
  thread_ = std::thread([this] { loop(); });
}

LivenessProber::~LivenessProber() {
  stop_ = true;
  wake_.notify_all();
  thread_.join();
}

void LivenessProber::set_jobs(std::map<int, ProbeJob> jobs) {
  std::lock_guard lock(mutex_);
  jobs_ = std::move(jobs);
}

std::map<int, ProbeResult> LivenessProber::take() {
  std::lock_guard lock(mutex_);
  return std::exchange(fresh_, {});
}

ProbeResult LivenessProber::probe_one(size_t slot, const ProbeJob& job) {
  const CancelToken cancel(&stop_);
  auto& conn = connections_[slot];
  if (!conn) {
    auto fresh = transport_.connect(workers_[slot], cancel);
    if (!fresh) return {Probe::unreachable, fresh.error().message, std::nullopt};
    conn = std::move(*fresh);
  }
  CaptureSink sink;
  // "exited N": the wrapper on this worker wrote the record, through this
  // worker's own NFS client, so the worker sees it at once.
  RemoteCommand probe{fmt::format("if [ -d /proc/{} ]; then echo alive; elif [ -s {} ]; then printf 'exited '; "
                                  "cat {}; else echo dead; fi",
                                  job.pid, shell_quote(job.exit_path), shell_quote(job.exit_path)),
                      "", 15000};
  auto exit = conn->run(probe, sink, cancel);
  if (!exit) {
    conn.reset();  // reconnect next time
    return {Probe::unreachable, exit.error().message, std::nullopt};
  }
  if (sink.out.rfind("alive", 0) == 0) return {Probe::alive, "", std::nullopt};
  if (sink.out.rfind("exited ", 0) == 0) {
    try {
      return {Probe::dead, "", std::stoi(sink.out.substr(7))};
    } catch (const std::exception&) {
    }
  }
  if (sink.out.rfind("dead", 0) == 0) return {Probe::dead, "", std::nullopt};
  return {Probe::none, "", std::nullopt};
}

void LivenessProber::loop() {
  while (!stop_) {
    std::map<int, ProbeJob> jobs;
    {
      std::lock_guard lock(mutex_);
      jobs = jobs_;
    }
    std::vector<std::pair<size_t, ProbeJob>> todo;  // slot, job
    for (size_t i = 0; i < workers_.size(); ++i) {
      auto it = jobs.find(workers_[i].index);
      if (it != jobs.end()) todo.emplace_back(i, it->second);
    }
    std::vector<ProbeResult> results(todo.size());
    run_parallel(todo.size(), fanout_, [&](size_t k) { results[k] = probe_one(todo[k].first, todo[k].second); });
    {
      std::unique_lock lock(mutex_);
      for (size_t k = 0; k < todo.size(); ++k) {
        if (results[k].probe != Probe::none) fresh_[workers_[todo[k].first].index] = results[k];
      }
      wake_.wait_for(lock, every_, [this] { return stop_.load(); });
    }
  }
}

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

}  // namespace tpurun

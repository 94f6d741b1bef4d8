#include "tpurun/liveness.hpp"

#include <fmt/format.h>

#include "tpurun/fanout.hpp"

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

void LivenessProber::set_jobs(std::map<int, int> pid_by_worker) {
  std::lock_guard lock(mutex_);
  jobs_ = std::move(pid_by_worker);
}

std::map<int, ProbeResult> LivenessProber::take() {
  std::lock_guard lock(mutex_);
  return std::exchange(fresh_, {});
}

ProbeResult LivenessProber::probe_one(size_t slot, int pid) {
  const CancelToken cancel(&stop_);
  auto& conn = connections_[slot];
  if (!conn) {
    auto fresh = transport_.connect(workers_[slot], cancel);
    if (!fresh) return {Probe::unreachable, fresh.error().message};
    conn = std::move(*fresh);
  }
  CaptureSink sink;
  RemoteCommand probe{fmt::format("if [ -d /proc/{} ]; then echo alive; else echo dead; fi", pid), "", 15000};
  auto exit = conn->run(probe, sink, cancel);
  if (!exit) {
    conn.reset();  // reconnect next time
    return {Probe::unreachable, exit.error().message};
  }
  if (sink.out.rfind("alive", 0) == 0) return {Probe::alive, ""};
  if (sink.out.rfind("dead", 0) == 0) return {Probe::dead, ""};
  return {Probe::none, ""};
}

void LivenessProber::loop() {
  while (!stop_) {
    std::map<int, int> jobs;
    {
      std::lock_guard lock(mutex_);
      jobs = jobs_;
    }
    std::vector<std::pair<size_t, int>> todo;  // slot, pid
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

}  // namespace tpurun

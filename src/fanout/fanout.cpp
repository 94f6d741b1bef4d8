#include "tpurun/fanout/fanout.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace tpurun {
namespace {

// Live output (terminal) and, when asked, a capture for --json / --gather.
class LiveAndCapture : public OutputSink {
 public:
  LiveAndCapture(OutputSink* live, CaptureSink* capture) : live_(live), capture_(capture) {}
  void write(Stream stream, std::string_view data) override {
    if (live_ != nullptr) live_->write(stream, data);
    if (capture_ != nullptr) capture_->write(stream, data);
  }

 private:
  OutputSink* live_;
  CaptureSink* capture_;
};

}  // namespace

void run_parallel(size_t n, int width, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  size_t threads = std::min(n, static_cast<size_t>(std::max(1, width)));
  std::atomic<size_t> next{0};
  auto drain = [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(drain);
  drain();  // the calling thread works too
  for (std::thread& t : pool) t.join();
}

std::vector<WorkerOutcome> run_on_workers(const FanoutPlan& plan, Transport& transport,
                                          const std::vector<OutputSink*>& live,
                                          const CancelToken& cancel,
                                          const std::function<void(const WorkerOutcome&)>& on_done) {
  std::vector<WorkerOutcome> outcomes(plan.workers.size());
  run_parallel(plan.workers.size(), plan.fanout, [&](size_t i) {
    const Worker& worker = plan.workers[i];
    const auto start = std::chrono::steady_clock::now();
    WorkerOutcome& outcome = outcomes[i];
    outcome.worker = worker;
    CaptureSink capture;
    LiveAndCapture tee(i < live.size() ? live[i] : nullptr, plan.capture ? &capture : nullptr);

    auto conn = transport.connect(worker, cancel);
    if (!conn) {
      outcome.result = conn.error();
    } else {
      auto ran = (*conn)->run(plan.command_for ? plan.command_for(worker) : plan.command, tee, cancel);
      if (ran) outcome.result = *ran;
      else outcome.result = ran.error();
    }
    outcome.out = std::move(capture.out);
    outcome.err = std::move(capture.err);
    outcome.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (on_done) on_done(outcome);
  });
  return outcomes;
}

}  // namespace tpurun

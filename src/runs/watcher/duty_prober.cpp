#include "runs/watcher/duty_prober.hpp"

#include "tpurun/fanout/fanout.hpp"

namespace tpurun {

DutyProber::DutyProber(Transport& transport, std::vector<Worker> workers, int fanout, std::chrono::milliseconds every)
    : transport_(transport), workers_(std::move(workers)), fanout_(fanout), every_(every) {
  connections_.resize(workers_.size());
  thread_ = std::thread([this] { loop(); });
}

DutyProber::~DutyProber() {
  stop_ = true;
  wake_.notify_all();
  thread_.join();
}

std::optional<std::vector<TpuMetricsOutcome>> DutyProber::take() {
  std::lock_guard lock(mutex_);
  return std::exchange(fresh_, std::nullopt);
}

void DutyProber::loop() {
  const CancelToken cancel(&stop_);
  while (!stop_) {
    std::vector<TpuMetricsOutcome> round(workers_.size());
    run_parallel(workers_.size(), fanout_, [&](size_t i) {
      auto& conn = connections_[i];
      if (!conn) {
        auto fresh = transport_.connect(workers_[i], cancel);
        if (!fresh) {
          round[i] = MetricsFailure{fresh.error().message, fresh.error().kind, std::nullopt};
          return;
        }
        conn = std::move(*fresh);
      }
      round[i] = fetch_tpu_metrics(*conn, MetricsEndpoint{}, cancel);
      if (const auto* f = std::get_if<MetricsFailure>(&round[i]); f && f->transport) conn.reset();  // reconnect next time
    });
    std::unique_lock lock(mutex_);
    if (!stop_) fresh_ = std::move(round);
    wake_.wait_for(lock, every_, [this] { return stop_.load(); });
  }
}

}  // namespace tpurun

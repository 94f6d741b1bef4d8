#include "runs/stall.hpp"

#include <algorithm>

#include "tpurun/fanout.hpp"

namespace tpurun {

std::optional<bool> gang_idle(const std::vector<TpuMetricsOutcome>& workers) {
  bool known = !workers.empty();
  for (const TpuMetricsOutcome& o : workers) {
    const auto* figures = std::get_if<TpuFigures>(&o);
    if (figures == nullptr) {
      known = false;
      continue;
    }
    bool any_duty = false;
    for (const ChipFigures& chip : figures->chips) {
      if (!chip.duty_cycle_pct) continue;
      any_duty = true;
      if (*chip.duty_cycle_pct > 0) return false;
    }
    if (!any_duty) known = false;
  }
  if (!known) return std::nullopt;
  return true;
}

std::optional<StallWatch::Time> StallWatch::observe(std::optional<bool> idle, bool log_grew, Time now) {
  if (idle != true || log_grew) {
    quiet_since_.reset();
    return std::nullopt;
  }
  if (!quiet_since_) quiet_since_ = now;
  if (now - *quiet_since_ >= after_) return quiet_since_;
  return std::nullopt;
}

std::chrono::milliseconds stall_poll_interval(std::chrono::milliseconds stall_after) {
  return std::clamp<std::chrono::milliseconds>(stall_after / 6, std::chrono::seconds(1), std::chrono::seconds(30));
}

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

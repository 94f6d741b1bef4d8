#include "runs/watcher/stall_rule.hpp"

#include <algorithm>

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

std::optional<StallRule::Time> StallRule::observe(std::optional<bool> idle, bool log_grew, Time now) {
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

}  // namespace tpurun

#include "queue_wait.hpp"

#include <algorithm>

namespace tpurun {
namespace {

bool provisioning(const std::string& state) { return state == "PROVISIONING" || state == "ACTIVE"; }

}  // namespace

QueueWait::QueueWait(const QueueWaitLimits& limits, Clock::time_point start)
    : limits_(limits), start_(start), entered_(start), last_heartbeat_(start), poll_(limits.poll) {}

bool QueueWait::seen(const std::string& state, Clock::time_point now) {
  if (provisioning(state) && !provisioning_since_) provisioning_since_ = now;
  if (state == state_) {
    // Nothing moved: ask less often, up to poll_max (never below poll).
    poll_ = std::clamp(poll_ * 2, limits_.poll, std::max(limits_.poll, limits_.poll_max));
    return false;
  }
  state_ = state;
  entered_ = last_heartbeat_ = now;
  poll_ = limits_.poll;
  return true;
}

bool QueueWait::over_max_queued(Clock::time_point now) const {
  return !provisioning_since_ && limits_.max_queued.count() > 0 && now - start_ > limits_.max_queued;
}

bool QueueWait::over_ready_timeout(Clock::time_point now) const {
  return provisioning_since_ && now - *provisioning_since_ > limits_.ready_timeout;
}

bool QueueWait::heartbeat_due(Clock::time_point now) {
  if (limits_.heartbeat.count() <= 0 || now - last_heartbeat_ < limits_.heartbeat) return false;
  last_heartbeat_ = now;
  return true;
}

std::optional<std::chrono::milliseconds> Backoff::failed(Clock::time_point now) {
  if (!failing_since_) failing_since_ = now;
  if (now - *failing_since_ > limit_) return std::nullopt;
  std::chrono::milliseconds wait = first_;
  for (int i = 0; i < tries_ && wait < cap_; ++i) wait *= 2;
  ++tries_;
  return std::min(wait, cap_);
}

}  // namespace tpurun

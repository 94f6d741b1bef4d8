#pragma once
// The clocks of one wait on a queued resource, pure (times are passed in):
// how long it has been in the queue (max_queued), how long since it began
// PROVISIONING (the ready timeout counts from there, not from the start: a
// resource that waited 30 minutes in the queue is not thrown away as soon as
// it gets capacity), when to describe it again (the poll grows while nothing
// changes, so a long wait costs few gcloud calls), and when to print a line
// for a reader with no live status line.
#include <chrono>
#include <optional>
#include <string>

namespace tpurun {

struct QueueWaitLimits {
  std::chrono::seconds max_queued{0};  // 0: as long as it takes
  std::chrono::seconds ready_timeout{1800};
  std::chrono::milliseconds poll{2000};       // after a change
  std::chrono::milliseconds poll_max{30000};  // while nothing changes
  std::chrono::seconds heartbeat{300};        // a "still ..." line this often without a live status line
};

class QueueWait {
 public:
  using Clock = std::chrono::steady_clock;
  QueueWait(const QueueWaitLimits& limits, Clock::time_point start);

  // A describe's state, seen at `now`: true when it changed.
  bool seen(const std::string& state, Clock::time_point now);
  // Waited in the queue (not provisioning yet) longer than max_queued.
  bool over_max_queued(Clock::time_point now) const;
  // PROVISIONING (or ACTIVE with its node not READY) longer than the ready timeout.
  bool over_ready_timeout(Clock::time_point now) const;
  // Time to print "still STATE after ..." (once per heartbeat).
  bool heartbeat_due(Clock::time_point now);
  std::chrono::milliseconds next_poll() const { return poll_; }

  Clock::duration in_state(Clock::time_point now) const { return now - entered_; }
  Clock::duration queued_for(Clock::time_point now) const { return now - start_; }
  const std::string& state() const { return state_; }

 private:
  QueueWaitLimits limits_;
  Clock::time_point start_, entered_, last_heartbeat_;
  std::optional<Clock::time_point> provisioning_since_;
  std::string state_;
  std::chrono::milliseconds poll_;
};

// How long to wait before trying a call again after a transient error (429,
// 5xx, a timeout): doubling from `first` up to `cap`; given up once errors
// have lasted `limit` without a success in between.
class Backoff {
 public:
  using Clock = std::chrono::steady_clock;
  Backoff(std::chrono::milliseconds first, std::chrono::milliseconds cap, std::chrono::seconds limit)
      : first_(first), cap_(cap), limit_(limit) {}
  // An error at `now`: the wait before the next try, or nullopt once the errors have lasted past the limit.
  std::optional<std::chrono::milliseconds> failed(Clock::time_point now);
  void succeeded() { failing_since_.reset(), tries_ = 0; }
  int tries() const { return tries_; }

 private:
  std::chrono::milliseconds first_, cap_;
  std::chrono::seconds limit_;
  std::optional<Clock::time_point> failing_since_;
  int tries_ = 0;
};

}  // namespace tpurun

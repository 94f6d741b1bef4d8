#include "tpurun/util/file_watch/poll_backoff.hpp"

#include <algorithm>

namespace tpurun {

PollBackoff::PollBackoff(TimePoint now, BackoffOptions options)
    : options_(options), interval_(options.fastest), due_(now) {}

void PollBackoff::checked(bool grew, TimePoint now) {
  if (grew) {
    interval_ = options_.fastest;
  } else {
    const auto longer = std::chrono::milliseconds(static_cast<long long>(interval_.count() * options_.growth));
    interval_ = std::clamp(longer, options_.fastest, options_.slowest);
  }
  due_ = now + interval_;
}

}  // namespace tpurun

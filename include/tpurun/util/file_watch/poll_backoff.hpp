#pragma once
// When to look again at a file that can only be polled (NFS: inotify does not
// see writes made on other clients): soon after it grew, less and less often
// while it stays quiet, and never less often than `slowest`, which bounds how
// late a new line can show. A quiet run then costs about one check per file
// per `slowest`, and a busy file is checked every `fastest`.
#include <chrono>

namespace tpurun {

struct BackoffOptions {
  std::chrono::milliseconds fastest{100};
  std::chrono::milliseconds slowest{800};
  double growth = 1.5;  // the interval grows by this after each check that found nothing
};

class PollBackoff {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // Due at once: a new file is checked on the first pass.
  explicit PollBackoff(TimePoint now, BackoffOptions options = {});
  // The file was just checked; `grew` says whether it had changed.
  void checked(bool grew, TimePoint now);
  TimePoint due() const { return due_; }
  std::chrono::milliseconds interval() const { return interval_; }

 private:
  BackoffOptions options_;
  std::chrono::milliseconds interval_;
  TimePoint due_;
};

}  // namespace tpurun

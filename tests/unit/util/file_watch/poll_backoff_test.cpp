// The polling schedule: fast after a change, slower while quiet, never slower than `slowest`.
#include "tpurun/util/file_watch/poll_backoff.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace tpurun {
namespace {

using std::chrono::milliseconds;
using TimePoint = PollBackoff::TimePoint;

TEST(PollBackoffTest, NewFileIsDueAtOnce) {
  const TimePoint t0{};
  PollBackoff backoff(t0);
  EXPECT_EQ(backoff.due(), t0);
}

TEST(PollBackoffTest, QuietFileSlowsDownToTheSlowestInterval) {
  TimePoint now{};
  PollBackoff backoff(now, BackoffOptions{milliseconds(100), milliseconds(800), 1.5});
  std::vector<long long> intervals;
  for (int i = 0; i < 8; ++i) {
    backoff.checked(false, now);
    intervals.push_back(backoff.interval().count());
    EXPECT_EQ(backoff.due(), now + backoff.interval());
    now = backoff.due();
  }
  EXPECT_EQ(intervals, (std::vector<long long>{150, 225, 337, 505, 757, 800, 800, 800}));
}

TEST(PollBackoffTest, OutputBringsTheFastestIntervalBack) {
  TimePoint now{};
  PollBackoff backoff(now);
  for (int i = 0; i < 10; ++i) backoff.checked(false, now);
  ASSERT_EQ(backoff.interval(), milliseconds(800));
  backoff.checked(true, now);
  EXPECT_EQ(backoff.interval(), milliseconds(100));
  EXPECT_EQ(backoff.due(), now + milliseconds(100));
}

TEST(PollBackoffTest, BusyFileStaysFast) {
  TimePoint now{};
  PollBackoff backoff(now);
  for (int i = 0; i < 5; ++i) {
    backoff.checked(true, now);
    now = backoff.due();
  }
  EXPECT_EQ(backoff.interval(), milliseconds(100));
}

}  // namespace
}  // namespace tpurun

// queue_wait: the clocks of a wait on a queued resource, at given times.
#include "cloud/queue_wait.hpp"

#include <gtest/gtest.h>

namespace tpurun {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using Clock = QueueWait::Clock;

QueueWaitLimits limits() {
  QueueWaitLimits l;
  l.max_queued = minutes(30);
  l.ready_timeout = minutes(30);
  l.poll = milliseconds(2000);
  l.poll_max = milliseconds(30000);
  l.heartbeat = minutes(5);
  return l;
}

TEST(QueueWaitTest, TheReadyTimeoutCountsFromProvisioningNotFromTheStart) {
  // given: 29 minutes in the queue, then PROVISIONING
  const auto t0 = Clock::time_point{} + std::chrono::hours(1);
  QueueWait w(limits(), t0);
  w.seen("WAITING_FOR_RESOURCES", t0);
  EXPECT_FALSE(w.over_max_queued(t0 + minutes(29)));
  w.seen("PROVISIONING", t0 + minutes(29));
  // then: past 30 minutes since the start it is neither over max_queued nor over the ready timeout
  EXPECT_FALSE(w.over_max_queued(t0 + minutes(45)));
  EXPECT_FALSE(w.over_ready_timeout(t0 + minutes(45)));
  // only 30 minutes after PROVISIONING began
  EXPECT_TRUE(w.over_ready_timeout(t0 + minutes(60)));
}

TEST(QueueWaitTest, MaxQueuedCountsTheWaitInTheQueue) {
  const auto t0 = Clock::time_point{} + std::chrono::hours(1);
  QueueWait w(limits(), t0);
  w.seen("WAITING_FOR_RESOURCES", t0);
  EXPECT_FALSE(w.over_max_queued(t0 + minutes(30)));
  EXPECT_TRUE(w.over_max_queued(t0 + minutes(31)));
  EXPECT_FALSE(w.over_ready_timeout(t0 + minutes(90)));  // never provisioning: only max_queued applies
}

TEST(QueueWaitTest, NoMaxQueuedWaitsAsLongAsItTakes) {
  QueueWaitLimits l = limits();
  l.max_queued = seconds(0);
  const auto t0 = Clock::time_point{} + std::chrono::hours(1);
  QueueWait w(l, t0);
  w.seen("WAITING_FOR_RESOURCES", t0);
  EXPECT_FALSE(w.over_max_queued(t0 + std::chrono::hours(48)));
}

TEST(QueueWaitTest, ThePollGrowsWhileNothingChangesAndIsShortAgainAfterAChange) {
  const auto t0 = Clock::time_point{} + std::chrono::hours(1);
  QueueWait w(limits(), t0);
  EXPECT_TRUE(w.seen("WAITING_FOR_RESOURCES", t0));
  EXPECT_EQ(w.next_poll(), milliseconds(2000));
  std::vector<long long> polls;
  for (int i = 1; i <= 6; ++i) {
    EXPECT_FALSE(w.seen("WAITING_FOR_RESOURCES", t0 + seconds(i)));
    polls.push_back(w.next_poll().count());
  }
  EXPECT_EQ(polls, (std::vector<long long>{4000, 8000, 16000, 30000, 30000, 30000}));
  EXPECT_TRUE(w.seen("PROVISIONING", t0 + seconds(100)));
  EXPECT_EQ(w.next_poll(), milliseconds(2000));
}

TEST(QueueWaitTest, AHeartbeatEveryFewMinutesInOneState) {
  const auto t0 = Clock::time_point{} + std::chrono::hours(1);
  QueueWait w(limits(), t0);
  w.seen("WAITING_FOR_RESOURCES", t0);
  EXPECT_FALSE(w.heartbeat_due(t0 + minutes(4)));
  EXPECT_TRUE(w.heartbeat_due(t0 + minutes(5)));
  EXPECT_FALSE(w.heartbeat_due(t0 + minutes(6)));  // once per heartbeat
  EXPECT_TRUE(w.heartbeat_due(t0 + minutes(10)));
  QueueWaitLimits live = limits();
  live.heartbeat = seconds(0);  // a live status line: none
  QueueWait quiet(live, t0);
  EXPECT_FALSE(quiet.heartbeat_due(t0 + minutes(60)));
}

TEST(BackoffTest, DoublesUpToTheCapAndGivesUpAfterTheLimit) {
  const auto t0 = Clock::time_point{} + std::chrono::hours(1);
  Backoff b(milliseconds(2000), milliseconds(30000), seconds(70));
  EXPECT_EQ(b.failed(t0), milliseconds(2000));
  EXPECT_EQ(b.failed(t0 + seconds(2)), milliseconds(4000));
  EXPECT_EQ(b.failed(t0 + seconds(6)), milliseconds(8000));
  EXPECT_EQ(b.failed(t0 + seconds(14)), milliseconds(16000));
  EXPECT_EQ(b.failed(t0 + seconds(30)), milliseconds(30000));
  EXPECT_EQ(b.failed(t0 + seconds(60)), milliseconds(30000));
  EXPECT_EQ(b.failed(t0 + seconds(71)), std::nullopt);  // 70 s of errors: given up
  // a success in between starts again
  b.succeeded();
  EXPECT_EQ(b.failed(t0 + seconds(80)), milliseconds(2000));
}

}  // namespace
}  // namespace tpurun

// `down` means down: the intent down leaves, read back, and the rule of
// what it stops (what began before it, never what began after it).
#include "tpurun/pod/down_intent.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "fakes/system_fakes.hpp"
#include "fakes/temp_dir.hpp"
#include "tpurun/util/atomic_file.hpp"

namespace tpurun {
namespace {

using Clock = std::chrono::system_clock;
using std::chrono::milliseconds;

DownIntent intent_at(Clock::time_point at) {
  DownIntent i;
  i.at = at;
  i.tpu = "rc";
  i.zone = "us-central2-b";
  i.project = "sim-proj";
  i.pod = "rc";
  i.host = "devvm";
  i.pid = 4242;
  return i;
}

TEST(DownIntentTest, WrittenAndReadBackPerTpuVmInTheUsersStateDir) {
  testing::TempDir temp;
  testing::FakeEnvironment env(std::map<std::string, std::string>{{"XDG_STATE_HOME", temp.path()}});
  const std::string path = down_intent_path(GcloudSpec{"rc", "us-central2-b", "sim-proj", true}, env);
  EXPECT_EQ(path, temp.path() + "/tpurun/down/sim-proj_rc.json");
  // the zone does not change which VM it is
  EXPECT_EQ(down_intent_path(GcloudSpec{"rc", "us-east1-d", "sim-proj", true}, env), path);
  EXPECT_FALSE(read_down_intent(path));
  const Clock::time_point at = Clock::time_point(milliseconds(1'800'000'000'123));
  write_down_intent(path, intent_at(at));
  auto back = read_down_intent(path);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->at, at);  // to the millisecond
  EXPECT_EQ(back->tpu, "rc");
  EXPECT_EQ(back->zone, "us-central2-b");
  EXPECT_EQ(back->pid, 4242);
  EXPECT_EQ(down_intent_text(*back),
            "`tpurun down` (2027-01-15T08:00:00Z, pid 4242 on devvm) asked for TPU VM rc to be deleted");
}

TEST(DownIntentTest, AnUnreadableIntentStopsNothing) {
  testing::TempDir temp;
  const std::string path = temp.path() + "/i.json";
  write_file_atomic(path, "{not json");
  EXPECT_FALSE(read_down_intent(path));
  write_file_atomic(path, R"({"at": "2026-01-01T00:00:00Z"})");  // no at_ms
  EXPECT_FALSE(read_down_intent(path));
  EXPECT_FALSE(down_intent_since(path, Clock::time_point{}));
  EXPECT_FALSE(down_intent_since("", Clock::time_point{}));
}

TEST(DownIntentTest, ItStopsWhatBeganBeforeItNeverWhatBeganAfterIt) {
  const Clock::time_point down_at = Clock::time_point(milliseconds(1'800'000'000'500));
  const DownIntent intent = intent_at(down_at);
  // an up (or a run) that began before down: stopped
  EXPECT_TRUE(down_intent_applies(intent, down_at - milliseconds(1)));
  // a run recorded to the second, staged in down's second: stopped too
  EXPECT_TRUE(down_intent_applies(intent, Clock::time_point(milliseconds(1'800'000'000'000))));
  // a later up brings the pod up again: the earlier down does not stop it
  EXPECT_FALSE(down_intent_applies(intent, down_at + milliseconds(1)));
}

TEST(DownIntentTest, TheWatchSeesAnIntentWrittenAfterItsStartAndNotAnOlderOne) {
  testing::TempDir temp;
  const std::string path = temp.path() + "/down/p_rc.json";
  const Clock::time_point start = std::chrono::time_point_cast<milliseconds>(Clock::now());  // as kept
  write_down_intent(path, intent_at(start - milliseconds(5000)));  // an earlier down: superseded
  DownIntentWatch watch(path, start, milliseconds(1));
  write_down_intent(path, intent_at(start + milliseconds(1)));
  for (int i = 0; i < 5000 && !watch.flag()->load(); ++i) std::this_thread::sleep_for(milliseconds(1));
  ASSERT_TRUE(watch.flag()->load());
  ASSERT_TRUE(watch.seen());
  EXPECT_EQ(watch.seen()->at, start + milliseconds(1));
}

TEST(DownIntentTest, AWatchWithNoIntentEndsWhenDestroyed) {
  testing::TempDir temp;
  DownIntentWatch watch(temp.path() + "/none.json", Clock::now(), milliseconds(10000));
  EXPECT_FALSE(watch.flag()->load());
  EXPECT_FALSE(watch.seen());
}

}  // namespace
}  // namespace tpurun

// status --all: the line and JSON record that show a pod's state, holders
// and claim.
#include "tpurun/ui/board_view.hpp"

#include <gmock/gmock.h>

#include "board/board_fixtures.hpp"

namespace tpurun {
namespace {

using ::testing::HasSubstr;
using tpurun::testing::pod;
using S = TpuState;

TEST(BoardStateTest, TheLineAndTheRecordShowStateHoldersAndClaim) {
  const auto now = WallClock::from_time_t(1'800'000'000);
  BoardEntry e;
  e.pod = "v4-a";
  e.workers = pod({S::busy_other, S::busy_other});
  e.state = pod_state(e.workers);
  e.holders = pod_holders(e.workers);
  Claim c;
  c.user = "bob";
  c.note = "sweep";
  c.expires_at = now + std::chrono::hours(2);
  e.claim = c;

  std::string line = format_board_line(e, now, 6);
  EXPECT_THAT(line, HasSubstr("v4-a    busy"));
  EXPECT_THAT(line, HasSubstr("bob: python3 train.py [run run-1] on w[0-1]"));
  EXPECT_THAT(line, HasSubstr("claimed by bob, 2h00m left"));
  EXPECT_THAT(line, HasSubstr("sweep"));

  nlohmann::json j = board_entry_to_json(e, now);
  EXPECT_EQ(j["pod"], "v4-a");
  EXPECT_EQ(j["state"], "busy");
  EXPECT_EQ(j["holders"][0]["user"], "bob");
  EXPECT_EQ(j["claim"]["user"], "bob");
  EXPECT_EQ(j["claim"]["seconds_left"], 7200);
  EXPECT_EQ(j["workers"].size(), 2u);
  EXPECT_EQ(j["workers"][0]["state"], "busy-other");

  e.claim.reset();
  EXPECT_TRUE(board_entry_to_json(e, now)["claim"].is_null());

  BoardEntry down;
  down.pod = "v4-d";
  down.workers = pod({S::free, S::unreachable, S::unreachable});
  down.state = pod_state(down.workers);
  EXPECT_EQ(format_board_line(down, now, 4), "v4-d  unreachable  w[1-2] unreachable");
}

TEST(BoardStateTest, AnIdleHolderShowsForHowLong) {
  const auto now = WallClock::from_time_t(1'800'000'000);
  BoardEntry e;
  e.pod = "v4-a";
  e.workers = pod({S::busy_other, S::busy_other});
  e.state = pod_state(e.workers);
  e.holders = pod_holders(e.workers);
  e.holders[0].idle_since = now - std::chrono::minutes(130);
  EXPECT_THAT(format_board_line(e, now, 6), HasSubstr("bob: python3 train.py [run run-1] on w[0-1], "));
  EXPECT_THAT(format_board_line(e, now, 6), HasSubstr(", idle 2h10m"));
  EXPECT_EQ(board_entry_to_json(e, now)["holders"][0]["idle_since"], format_utc_time(now - std::chrono::minutes(130)));
  e.holders[0].idle_since.reset();
  EXPECT_THAT(format_board_line(e, now, 6), ::testing::Not(HasSubstr("idle")));
  EXPECT_TRUE(board_entry_to_json(e, now)["holders"][0]["idle_since"].is_null());
}

TEST(BoardStateTest, GcloudTpusShowTheirTypeAndStateOnOneLine) {
  const auto now = WallClock::now();
  BoardEntry old;
  old.pod = "old";
  old.accelerator = "v4-8";
  old.gcloud_state = "PREEMPTED";
  old.state = "unreachable";
  EXPECT_EQ(format_board_line(old, now, 11), "old (v4-8)   unreachable  gcloud: PREEMPTED");
  EXPECT_EQ(board_entry_to_json(old, now)["accelerator_type"], "v4-8");
  EXPECT_EQ(board_entry_to_json(old, now)["gcloud_state"], "PREEMPTED");
  BoardEntry failed;
  failed.pod = "g";
  failed.state = "error";
  failed.error = "gcloud failed (exit 1):\nERROR: boom";
  EXPECT_EQ(format_board_line(failed, now, 1), "g  error        gcloud failed (exit 1): ERROR: boom");
}

}  // namespace
}  // namespace tpurun

// status --all: one state per pod from its workers' verdicts, holders merged
// across workers, and the line and JSON record that show them with the claim.
#include "cli/board.hpp"

#include <gmock/gmock.h>

#include "../tpu/scan_fixtures.hpp"
#include "fake_transport.hpp"

namespace tpurun::cli {
namespace {

using ::testing::HasSubstr;
using tpurun::testing::empty_scan;
using tpurun::testing::holder;
using tpurun::testing::make_workers;
using tpurun::testing::proc;

std::vector<WorkerScanResult> pod(const std::vector<TpuState>& states) {
  auto workers = make_workers(static_cast<int>(states.size()));
  std::vector<WorkerScanResult> out;
  for (size_t i = 0; i < states.size(); ++i) {
    LockScan s = empty_scan();
    if (states[i] == TpuState::busy_other) {
      s.holders.push_back(holder(proc(4000 + static_cast<int>(i), 1002, 4000, 1, "python3 /home/bob/train.py", "run-1")));
    }
    WorkerScanResult r{workers[i], states[i], std::nullopt, ""};
    if (states[i] != TpuState::unreachable && states[i] != TpuState::error) r.scan = s;
    if (states[i] == TpuState::unreachable) r.error = "connection refused";
    out.push_back(r);
  }
  return out;
}

using S = TpuState;

TEST(BoardStateTest, OneStatePerPod) {
  EXPECT_EQ(pod_state(pod({S::free, S::free})), "free");
  EXPECT_EQ(pod_state(pod({S::busy_other, S::busy_other})), "busy");
  EXPECT_EQ(pod_state(pod({S::busy_self, S::stale_lock})), "busy");
  EXPECT_EQ(pod_state(pod({S::busy_other, S::free})), "partial");
  EXPECT_EQ(pod_state(pod({S::partial, S::free})), "partial");
  EXPECT_EQ(pod_state(pod({S::unreachable, S::unreachable})), "unreachable");
  EXPECT_EQ(pod_state(pod({S::free, S::unreachable})), "unreachable");
  EXPECT_EQ(pod_state(pod({S::busy_other, S::unreachable})), "partial");
  EXPECT_EQ(pod_state(pod({S::free, S::error})), "error");
  EXPECT_EQ(pod_state({}), "error");
}

TEST(BoardStateTest, HoldersMergeAcrossWorkers) {
  auto workers = pod({S::busy_other, S::free, S::busy_other});
  auto holders = pod_holders(workers);
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].user, "bob");
  EXPECT_EQ(holders[0].command, "python3 train.py");
  EXPECT_EQ(holders[0].run_id, "run-1");
  EXPECT_EQ(holders[0].workers, (std::vector<int>{0, 2}));
}

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
}  // namespace tpurun::cli

// status --all: one state per pod from its workers' verdicts, holders merged
// across workers.
#include "tpurun/board/board_entry.hpp"

#include <gmock/gmock.h>

#include "board/board_fixtures.hpp"

namespace tpurun {
namespace {

using tpurun::testing::pod;
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

}  // namespace
}  // namespace tpurun

// The variables each worker of a multi-slice run gets: MEGASCALE_* and TPURUN_SLICE*.
#include <gtest/gtest.h>

#include "tpurun/pod/slices.hpp"

namespace tpurun {
namespace {

Worker slice_worker(int index, int slice, int in_slice, const std::string& host) {
  Worker w{index, host, 22};
  w.slice = slice;
  w.slice_worker = in_slice;
  return w;
}

TEST(SliceEnvTest, EveryWorkerIsToldItsSliceAndTheCoordinator) {
  const MultiSlice ms{2, "10.0.0.2", 8080};
  const auto env = slice_env(ms, slice_worker(5, 1, 1, "10.0.1.3"));
  EXPECT_EQ(env, (std::vector<std::pair<std::string, std::string>>{{"MEGASCALE_COORDINATOR_ADDRESS", "10.0.0.2:8080"},
                                                                   {"MEGASCALE_NUM_SLICES", "2"},
                                                                   {"MEGASCALE_SLICE_ID", "1"},
                                                                   {"MEGASCALE_PORT", "8080"},
                                                                   {"TPURUN_SLICE", "1"},
                                                                   {"TPURUN_SLICE_WORKER", "1"},
                                                                   {"TPURUN_NUM_SLICES", "2"}}));
}

TEST(SliceEnvTest, AnIpv6CoordinatorGetsBrackets) {
  const auto env = slice_env(MultiSlice{2, "fd00::2", 9000}, slice_worker(0, 0, 0, "fd00::2"));
  EXPECT_EQ(env.at(0).second, "[fd00::2]:9000");
  EXPECT_EQ(env.at(3).second, "9000");
}

}  // namespace
}  // namespace tpurun

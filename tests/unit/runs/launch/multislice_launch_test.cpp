// A multi-slice run's launcher script: the variables and the global worker index.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tpurun/runs/launch/launch.hpp"

namespace tpurun {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Worker slice_worker(int index, int slice, int in_slice, const std::string& host) {
  Worker w{index, host, 22};
  w.slice = slice;
  w.slice_worker = in_slice;
  return w;
}

// How `export KEY=VALUE` shows in the launcher script, where job_env is quoted as a whole.
std::string exported(const std::string& key, const std::string& value) {
  return "export " + key + "='\\''" + value + "'\\''\n";
}

LaunchSpec spec() { return LaunchSpec{"run1", "/logs/run1", "/staging/s1", {"python3", "main.py"}, {}, 8, 1, 1}; }

TEST(SliceLaunchTest, MultiSliceJobsGetTheVariablesAndTheGlobalWorker) {
  LaunchSpec s = spec();
  s.slices = MultiSlice{2, "10.0.0.2", 8080};
  const std::string script = launch_command(s, slice_worker(6, 1, 2, "10.0.1.4")).stdin_data;
  EXPECT_THAT(script, HasSubstr(exported("TPURUN_WORKER", "6")));
  EXPECT_THAT(script, HasSubstr(exported("TPURUN_NUM_WORKERS", "8")));
  EXPECT_THAT(script, HasSubstr(exported("MEGASCALE_COORDINATOR_ADDRESS", "10.0.0.2:8080")));
  EXPECT_THAT(script, HasSubstr(exported("MEGASCALE_SLICE_ID", "1")));
  EXPECT_THAT(script, HasSubstr(exported("TPURUN_SLICE_WORKER", "2")));
  // the job files keep the global index
  EXPECT_THAT(script, HasSubstr("worker=6\n"));
  EXPECT_THAT(script, HasSubstr("/logs/run1/worker6.pid"));
}

TEST(SliceLaunchTest, SingleSliceJobsGetNoMegascaleVariables) {
  const std::string script = launch_command(spec(), Worker{3, "10.0.0.5", 22}).stdin_data;
  EXPECT_THAT(script, HasSubstr(exported("TPURUN_WORKER", "3")));
  EXPECT_THAT(script, Not(HasSubstr("MEGASCALE")));
  EXPECT_THAT(script, Not(HasSubstr("TPURUN_SLICE")));
}

}  // namespace
}  // namespace tpurun

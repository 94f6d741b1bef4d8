// A multi-slice run's jobs: the MEGASCALE_* and TPURUN_SLICE* variables each
// worker gets, and what run.json keeps of the slices for restarts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/temp_dir.hpp"
#include "tpurun/launch.hpp"
#include "tpurun/run_record.hpp"

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

RunRecord record(const std::string& pod, const std::string& log_dir) {
  RunRecord r;
  r.run_id = "20250101_000000_abcdef_" + pod;
  r.user = "alice";
  r.pod = pod;
  r.command = {"true"};
  r.log_dir = log_dir;
  return r;
}

TEST(SliceRecordTest, RunJsonKeepsTheSlicesForRestarts) {
  testing::TempDir tmp;
  RunRecord r = record("a,b", tmp.path());
  r.workers = {slice_worker(0, 0, 0, "10.0.0.2"), slice_worker(1, 1, 0, "10.0.1.2")};
  r.slices = {"a", "b"};
  r.megascale = MultiSlice{2, "10.0.0.2", 8476};
  write_run_record(r, "");
  const RunRecord back = read_run_record(tmp.path());
  ASSERT_EQ(back.workers.size(), 2u);
  EXPECT_EQ(back.workers[1].display(), "w1 s1w0 10.0.1.2");
  EXPECT_EQ(back.slices, (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(back.megascale);
  EXPECT_EQ(back.megascale->num_slices, 2);
  EXPECT_EQ(back.megascale->coordinator, "10.0.0.2");
  EXPECT_EQ(back.megascale->port, 8476);
}

TEST(SliceRecordTest, SingleSliceRunJsonIsUnchanged) {
  testing::TempDir tmp;
  RunRecord r = record("sim", tmp.path());
  r.workers = {Worker{0, "10.0.0.2", 22}};
  write_run_record(r, "");
  const RunRecord back = read_run_record(tmp.path());
  EXPECT_EQ(back.workers[0].slice, -1);
  EXPECT_EQ(back.workers[0].display(), "w0 10.0.0.2");
  EXPECT_FALSE(back.megascale);
}

}  // namespace
}  // namespace tpurun

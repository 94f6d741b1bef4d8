// What run.json keeps of a multi-slice run's slices, for restarts.
#include <gtest/gtest.h>

#include "fakes/temp_dir.hpp"
#include "tpurun/runs/record/run_record.hpp"

namespace tpurun {
namespace {

Worker slice_worker(int index, int slice, int in_slice, const std::string& host) {
  Worker w{index, host, 22};
  w.slice = slice;
  w.slice_worker = in_slice;
  return w;
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

TEST(RunRecordWorkersTest, AGcloudWorkersHostKeyAliasIsKept) {
  // Given a gcloud pod's worker, known by gcloud's HostKeyAlias
  testing::TempDir tmp;
  RunRecord r = record("v4", tmp.path());
  r.workers = {Worker{0, "10.0.0.2", 22, "tpu.123-0"}, Worker{1, "10.0.0.3", 22}};
  write_run_record(r, "");
  // Then the watcher and kill --run check its host key under the alias again
  const RunRecord back = read_run_record(tmp.path());
  EXPECT_EQ(back.workers[0].host_key_alias, "tpu.123-0");
  EXPECT_EQ(back.workers[1].host_key_alias, "");
}

}  // namespace
}  // namespace tpurun

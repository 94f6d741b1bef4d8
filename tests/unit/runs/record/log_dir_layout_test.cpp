// The one map of a run's log dir: every name, and the watcher's log of a run
// that an older tpurun watched.
#include <gtest/gtest.h>

#include "fakes/temp_dir.hpp"
#include "runs/record/log_dir_layout.hpp"

namespace tpurun {
namespace {

TEST(LogDirLayout, NamesEveryFile) {
  EXPECT_EQ(run_json_path("/l/r"), "/l/r/run.json");
  EXPECT_EQ(state_json_path("/l/r"), "/l/r/state.json");
  EXPECT_EQ(git_diff_path("/l/r"), "/l/r/git.diff");
  EXPECT_EQ(stop_marker_path("/l/r"), "/l/r/stop");
  EXPECT_EQ(worker_log_path("/l/r", 3), "/l/r/worker3.log");
  EXPECT_EQ(job_file("/l/r", 3, 1, "exit"), "/l/r/worker3.exit");
  EXPECT_EQ(job_file("/l/r", 3, 2, "pid"), "/l/r/worker3.a2.pid");
  EXPECT_EQ(recorded_tpu_vm_path("/l/r"), "/l/r/tpu-vm/describe.json");
  EXPECT_EQ(metadata_dir("/l/r"), "/l/r/tpu-vm/metadata");
  EXPECT_EQ(recorded_setup_path("/l/r"), "/l/r/setup.sh");
  EXPECT_EQ(setup_log_path("/l/r"), "/l/r/setup.log");
}

// No shared mount: a worker's own records keep their names, profiles too
// (one file per host), and its job's files go under wN/.
TEST(LogDirLayout, WhereTheLogMirrorPutsAWorkersFiles) {
  EXPECT_EQ(mirrored_path(3, "worker3.log"), "worker3.log");
  EXPECT_EQ(mirrored_path(3, "worker3.a2.exit"), "worker3.a2.exit");
  EXPECT_EQ(mirrored_path(3, "plugins/profile/s1/host3.xplane.pb"), "plugins/profile/s1/host3.xplane.pb");
  EXPECT_EQ(mirrored_path(3, "app.log"), "w3/app.log");
  EXPECT_EQ(mirrored_path(3, "tb/events.out"), "w3/tb/events.out");
  EXPECT_EQ(mirrored_path(3, "worker1.exit"), "w3/worker1.exit");    // another worker's name: the job's file
  EXPECT_EQ(mirrored_path(1, "worker10.log"), "w1/worker10.log");
  EXPECT_EQ(mirrored_path(3, "sub/worker3.log"), "w3/sub/worker3.log");
}

TEST(LogDirLayout, TheWatchersLogOfARunAnOlderTpurunWatched) {
  testing::TempDir dir;
  // Given a new run: watcher.log, even before the watcher wrote it
  EXPECT_EQ(watcher_log_path(dir.path()), dir.path() + "/watcher.log");
  // Given a run of an older tpurun, whose watcher wrote supervisor.log
  dir.write("supervisor.log", "2026-01-01T00:00:00Z watching run r\n");
  EXPECT_EQ(watcher_log_name(dir.path()), "supervisor.log");
  // When both exist, the current name wins
  dir.write("watcher.log", "");
  EXPECT_EQ(watcher_log_name(dir.path()), "watcher.log");
}

}  // namespace
}  // namespace tpurun

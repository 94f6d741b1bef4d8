// A run whose watcher is gone: its exit records and stop marker settle it,
// by the watcher's own gang rule, and until they do it may still be running.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>

#include "fakes/temp_dir.hpp"
#include "runs/record/log_dir_layout.hpp"
#include "tpurun/runs/watcher/records_verdict.hpp"

namespace tpurun {
namespace {

class RecordsVerdictTest : public ::testing::Test {
 protected:
  RecordsVerdictTest() {
    record_.run_id = "20260101_000000_abcdef_sim";
    record_.user = "alice";
    record_.pod = "sim";
    record_.command = {"true"};
    record_.log_dir = dir_.path();
    record_.workers = {Worker{0, "10.0.0.2", 22}, Worker{1, "10.0.0.3", 22}};
    write_run_record(record_, "");
    RunState running;  // what the dead watcher last wrote: no live watcher in it
    running.workers = {{0, WorkerState::running, 10, {}, ""}, {1, WorkerState::running, 11, {}, ""}};
    write_run_state(dir_.path(), running);
  }
  void exit_record(int worker, const std::string& code) {
    std::ofstream(job_file(dir_.path(), worker, 1, "exit")) << code << "\n";
  }

  testing::TempDir dir_;
  RunRecord record_;
};

TEST_F(RecordsVerdictTest, AJobWithoutAnExitRecordMayStillRun) {
  exit_record(0, "0");
  EXPECT_FALSE(verdict_from_records(record_, *read_run_state(dir_.path())));
  EXPECT_TRUE(run_is_active(dir_.path()));
}

TEST_F(RecordsVerdictTest, EveryWorkerExitedZeroIsSucceeded) {
  exit_record(0, "0");
  exit_record(1, "0");
  auto s = verdict_from_records(record_, *read_run_state(dir_.path()));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->verdict, RunVerdict::succeeded);
  EXPECT_FALSE(run_is_active(dir_.path()));  // gc may free its snapshot
}

TEST_F(RecordsVerdictTest, AFailureNamesTheWorkerAndNoRestartIsCounted) {
  record_.gang.restarts = 2;  // a restart would be due, but no watcher makes one
  write_run_record(record_, "");
  exit_record(0, "0");
  exit_record(1, "3");
  auto s = verdict_from_records(record_, *read_run_state(dir_.path()));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->verdict, RunVerdict::failed);
  ASSERT_TRUE(s->first_failure);
  EXPECT_EQ(s->first_failure->worker, 1);
  EXPECT_EQ(s->first_failure->exit_code, 3);
}

TEST_F(RecordsVerdictTest, AStopMarkerMakesItStopped) {
  std::ofstream(stop_marker_path(dir_.path())) << "";
  exit_record(0, "143");
  exit_record(1, "143");
  auto s = verdict_from_records(record_, *read_run_state(dir_.path()));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->verdict, RunVerdict::stopped);
  EXPECT_EQ(s->workers[0].state, WorkerState::stopped);
}

TEST_F(RecordsVerdictTest, ALiveWatcherKeepsItActive) {
  exit_record(0, "0");
  exit_record(1, "0");
  RunState watched = *read_run_state(dir_.path());
  watched.watcher = this_process_as_watcher();
  watched.watcher.heartbeat = static_cast<long long>(std::time(nullptr));
  write_run_state(dir_.path(), watched);
  EXPECT_TRUE(run_is_active(dir_.path()));
}

TEST_F(RecordsVerdictTest, AFinalStateIsFinal) {
  RunState done = *read_run_state(dir_.path());
  done.verdict = RunVerdict::failed;
  write_run_state(dir_.path(), done);
  EXPECT_FALSE(run_is_active(dir_.path()));
}

}  // namespace
}  // namespace tpurun

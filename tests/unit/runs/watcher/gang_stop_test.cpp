// One rule for the workers' states after a stop (docs/runs.md, "After a
// stop"): a job that ended before the stop keeps its result, the first
// failure stays failed, and every other job still running when the stop
// began ends stopped, whatever it exited with. Time is passed in.
#include <gtest/gtest.h>

#include "runs/watcher/gang.hpp"
#include "tpurun/util/duration.hpp"

namespace tpurun {
namespace {

using namespace std::chrono_literals;
using Time = GangMonitor::Time;

const Time t0 = Time{} + 1000h;

WorkerSample running(int w) { return {w, 100 + w, std::nullopt, Probe::none, ""}; }
WorkerSample exited_at(int w, int code, Time at) { return {w, 100 + w, code, Probe::none, "", at}; }

std::vector<WorkerSample> all_running(int n) {
  std::vector<WorkerSample> s;
  for (int i = 0; i < n; ++i) s.push_back(running(i));
  return s;
}

TEST(GangStop, AfterKillEveryJobStillRunningIsStoppedWhateverItsCode) {
  // Given a 4-worker run where w0 had already finished before the kill
  GangMonitor gang({}, {0, 1, 2, 3});
  gang.observe(all_running(4), t0, false);
  gang.observe({exited_at(0, 0, t0 + 1s)}, t0 + 2s, false);
  // When `tpurun kill --run` leaves its marker at t0+10s, and the jobs end:
  // w1 handles SIGTERM and exits 0, w2 dies of it, w3 is still going
  const Time kill = t0 + 10s;
  EXPECT_EQ(gang.observe({exited_at(1, 0, kill + 1s), exited_at(2, 143, kill + 1s)}, kill + 2s, true, kill),
            GangAction::finished);
  const RunState& s = gang.state();
  // Then the run is stopped: w0 kept its own result, the others are stopped
  EXPECT_EQ(s.verdict, RunVerdict::stopped);
  EXPECT_EQ(s.workers[0].state, WorkerState::succeeded);
  EXPECT_EQ(s.workers[1].state, WorkerState::stopped);
  EXPECT_EQ(s.workers[1].detail, "stopped by tpurun (exited 0)");
  EXPECT_EQ(s.workers[2].state, WorkerState::stopped);
  EXPECT_EQ(s.workers[2].detail, "stopped by tpurun (killed by SIGTERM)");
  EXPECT_EQ(s.workers[3].state, WorkerState::stopped);
  EXPECT_FALSE(s.first_failure);
}

TEST(GangStop, AnExitRecordSeenLateButWrittenBeforeTheKillKeepsItsResult) {
  GangMonitor gang({}, {0, 1});
  gang.observe(all_running(2), t0, false);
  const Time kill = t0 + 10s;
  // w0's exit 3 was written before the marker, though the watcher reads both at once
  gang.observe({exited_at(0, 3, kill - 2s), exited_at(1, 143, kill + 1s)}, kill + 2s, true, kill);
  EXPECT_EQ(gang.state().workers[0].state, WorkerState::failed);
  EXPECT_EQ(gang.state().workers[1].state, WorkerState::stopped);
  EXPECT_EQ(gang.state().verdict, RunVerdict::stopped);
}

TEST(GangStop, AGangStopLeavesOneFailureAndTheRestStopped) {
  // Given a 4-worker run; w3 finished just before anything went wrong
  GangMonitor gang({}, {0, 1, 2, 3});
  gang.observe(all_running(4), t0, false);
  // When w1 exits 3 (w3's exit 0, written earlier, is read in the same look)
  EXPECT_EQ(gang.observe({exited_at(1, 3, t0 + 5s), exited_at(3, 0, t0 + 4s)}, t0 + 6s, false),
            GangAction::stop_others);
  gang.others_stopped();
  // and the others, sent TERM, exit 0 (handled) and 143
  EXPECT_EQ(gang.observe({exited_at(0, 0, t0 + 7s), exited_at(2, 143, t0 + 7s)}, t0 + 8s, false),
            GangAction::finished);
  const RunState& s = gang.state();
  EXPECT_EQ(s.verdict, RunVerdict::failed);
  EXPECT_EQ(s.workers[1].state, WorkerState::failed);
  EXPECT_EQ(s.workers[0].state, WorkerState::stopped);
  EXPECT_EQ(s.workers[2].state, WorkerState::stopped);
  EXPECT_EQ(s.workers[3].state, WorkerState::succeeded);
}

TEST(GangStop, AWatcherThatPicksUpARunReportsTheFailureWhenItHappened) {
  // Given a watcher started long after w0 failed (the first one died)
  GangMonitor gang({}, {0, 1});
  const Time failed = t0 - 100s;
  gang.observe({exited_at(0, 7, failed), running(1)}, t0, false);
  ASSERT_TRUE(gang.state().first_failure);
  EXPECT_EQ(gang.state().first_failure->at, format_utc_time(failed));
}

}  // namespace
}  // namespace tpurun

// The gang rule on its own: what the watcher is told to do for each thing
// it can see. Time is passed in; nothing sleeps.
#include <gtest/gtest.h>

#include "runs/watcher/gang.hpp"
#include "tpurun/runs/record/run_record.hpp"

namespace tpurun {
namespace {

using namespace std::chrono_literals;
using Time = GangMonitor::Time;

const Time t0 = Time{} + 1000h;

WorkerSample running(int w, int pid) { return {w, pid, std::nullopt, Probe::none, ""}; }
WorkerSample exited(int w, int code) { return {w, 100 + w, code, Probe::none, ""}; }
WorkerSample probed(int w, Probe p) { return {w, 100 + w, std::nullopt, p, p == Probe::unreachable ? "no route" : ""}; }

std::vector<WorkerSample> all_running(int n) {
  std::vector<WorkerSample> s;
  for (int i = 0; i < n; ++i) s.push_back(running(i, 100 + i));
  return s;
}

TEST(GangMonitor, NonZeroExitStopsTheOthersThenFails) {
  // Given a 4-worker run with the default policy
  GangMonitor gang({}, {0, 1, 2, 3});
  EXPECT_EQ(gang.observe(all_running(4), t0, false), GangAction::watch);
  // When worker 2 exits 3
  EXPECT_EQ(gang.observe({exited(2, 3)}, t0 + 1s, false), GangAction::stop_others);
  // Then the others, stopped by tpurun, are "stopped" and the run failed with w2's code
  gang.others_stopped();
  EXPECT_EQ(gang.observe({exited(0, 143), exited(1, 143), exited(3, 137)}, t0 + 2s, false), GangAction::finished);
  const RunState& s = gang.state();
  EXPECT_EQ(s.verdict, RunVerdict::failed);
  ASSERT_TRUE(s.first_failure);
  EXPECT_EQ(s.first_failure->worker, 2);
  EXPECT_EQ(s.first_failure->how, "exit");
  EXPECT_EQ(s.first_failure->exit_code, 3);
  EXPECT_EQ(s.workers[0].state, WorkerState::stopped);
  EXPECT_EQ(s.workers[2].state, WorkerState::failed);
  EXPECT_EQ(s.workers[3].detail, "stopped by tpurun (killed by SIGKILL)");
  EXPECT_TRUE(s.stopped_others);
}

TEST(GangMonitor, ExitZeroStopsNobody) {
  GangMonitor gang({}, {0, 1});
  gang.observe(all_running(2), t0, false);
  EXPECT_EQ(gang.observe({exited(0, 0)}, t0 + 1s, false), GangAction::watch);
  EXPECT_EQ(gang.observe({exited(1, 0)}, t0 + 5s, false), GangAction::finished);
  EXPECT_EQ(gang.state().verdict, RunVerdict::succeeded);
  EXPECT_FALSE(gang.state().first_failure);
}

// Issue 37: a job that filled its worker's log disk and exited 0 before a
// mirror round saw the disk full: its output there is not whole.
TEST(GangMonitor, AFullLogDiskSeenAtTheEndFailsARunThatSucceeded) {
  GangMonitor gang({}, {0, 1});
  gang.observe(all_running(2), t0, false);
  EXPECT_EQ(gang.observe({exited(0, 0), exited(1, 0)}, t0 + 1s, false), GangAction::finished);
  EXPECT_TRUE(gang.out_of_space_at_end(t0 + 2s, "out of space on w1's log dir"));
  EXPECT_EQ(gang.state().verdict, RunVerdict::failed);
  ASSERT_TRUE(gang.state().first_failure);
  EXPECT_EQ(gang.state().first_failure->how, "out_of_space");
  EXPECT_FALSE(gang.out_of_space_at_end(t0 + 3s, "again"));  // failed already: unchanged
  EXPECT_EQ(gang.state().first_failure->detail, "out of space on w1's log dir");
}

TEST(GangMonitor, SignalIsNamed) {
  GangMonitor gang({}, {0, 1});
  gang.observe(all_running(2), t0, false);
  gang.observe({exited(1, 128 + 9)}, t0, false);
  EXPECT_EQ(gang.state().first_failure->how, "signal");
  EXPECT_EQ(gang.state().first_failure->signal, "KILL");
  EXPECT_EQ(gang.state().first_failure->detail, "killed by SIGKILL");
}

TEST(GangMonitor, UnreachableLongerThanLostAfterIsLost) {
  GangPolicy policy;
  policy.lost_after = 10s;
  GangMonitor gang(policy, {0, 1});
  gang.observe(all_running(2), t0, false);
  EXPECT_EQ(gang.observe({probed(1, Probe::unreachable)}, t0 + 1s, false), GangAction::watch);
  EXPECT_EQ(gang.observe({probed(1, Probe::unreachable)}, t0 + 10s, false), GangAction::watch);
  EXPECT_EQ(gang.state().workers[1].state, WorkerState::running);
  EXPECT_EQ(gang.observe({probed(1, Probe::unreachable)}, t0 + 11s, false), GangAction::stop_others);
  EXPECT_EQ(gang.state().workers[1].state, WorkerState::lost);
  EXPECT_EQ(gang.state().first_failure->how, "lost");
  EXPECT_EQ(gang.state().first_failure->since, format_utc_time(t0 + 1s));
}

TEST(GangMonitor, AnAnswerResetsTheUnreachableClock) {
  GangPolicy policy;
  policy.lost_after = 10s;
  GangMonitor gang(policy, {0});
  gang.observe({probed(0, Probe::unreachable)}, t0, false);
  gang.observe({probed(0, Probe::alive)}, t0 + 9s, false);
  EXPECT_EQ(gang.observe({probed(0, Probe::unreachable)}, t0 + 12s, false), GangAction::watch);
  EXPECT_EQ(gang.state().workers[0].state, WorkerState::running);
}

TEST(GangMonitor, JobGoneTwiceWithoutExitRecordIsLost) {
  GangMonitor gang({}, {0, 1});
  gang.observe(all_running(2), t0, false);
  EXPECT_EQ(gang.observe({probed(0, Probe::dead)}, t0 + 3s, false), GangAction::watch);
  EXPECT_EQ(gang.observe({probed(0, Probe::dead)}, t0 + 6s, false), GangAction::stop_others);
  EXPECT_EQ(gang.state().workers[0].state, WorkerState::lost);
}

TEST(GangMonitor, ExitRecordArrivingAfterADeadProbeWins) {
  GangMonitor gang({}, {0});
  gang.observe({probed(0, Probe::dead)}, t0, false);
  EXPECT_EQ(gang.observe({exited(0, 0)}, t0 + 1s, false), GangAction::finished);
  EXPECT_EQ(gang.state().verdict, RunVerdict::succeeded);
}

TEST(GangMonitor, ContinueLetsTheOthersFinish) {
  GangPolicy policy;
  policy.stop_on_failure = false;
  GangMonitor gang(policy, {0, 1});
  gang.observe(all_running(2), t0, false);
  EXPECT_EQ(gang.observe({exited(0, 2)}, t0, false), GangAction::watch);
  EXPECT_EQ(gang.observe({exited(1, 0)}, t0 + 1s, false), GangAction::finished);
  EXPECT_EQ(gang.state().verdict, RunVerdict::failed);
  EXPECT_EQ(gang.state().workers[1].state, WorkerState::succeeded);
  EXPECT_FALSE(gang.state().stopped_others);
}

TEST(GangMonitor, RestartsUntilAttemptsRunOut) {
  GangPolicy policy;
  policy.max_attempts = 2;
  GangMonitor gang(policy, {0, 1});
  gang.observe(all_running(2), t0, false);
  EXPECT_EQ(gang.observe({exited(0, 1)}, t0, false), GangAction::stop_others);
  EXPECT_EQ(gang.observe({exited(1, 143)}, t0 + 1s, false), GangAction::restart);
  EXPECT_EQ(gang.state().verdict, RunVerdict::restarting);
  gang.begin_attempt(2);
  EXPECT_EQ(gang.state().attempt, 2);
  EXPECT_EQ(gang.state().workers[0].state, WorkerState::pending);
  EXPECT_EQ(gang.observe({exited(0, 1)}, t0 + 9s, false), GangAction::stop_others);
  EXPECT_EQ(gang.observe({exited(1, 143)}, t0 + 10s, false), GangAction::finished);
  EXPECT_EQ(gang.state().verdict, RunVerdict::failed);
}

TEST(GangMonitor, StopMarkerEndsTheRunAsStoppedWithoutRestart) {
  GangPolicy policy;
  policy.max_attempts = 3;
  GangMonitor gang(policy, {0, 1});
  gang.observe(all_running(2), t0, false);
  EXPECT_EQ(gang.observe({exited(0, 143)}, t0 + 1s, true), GangAction::finished);
  EXPECT_EQ(gang.state().verdict, RunVerdict::stopped);
  EXPECT_EQ(gang.state().workers[1].state, WorkerState::stopped);
}

TEST(GangMonitor, AJobThatNeverStartsIsLost) {
  GangPolicy policy;
  policy.start_timeout = 30s;
  GangMonitor gang(policy, {0, 1});
  gang.observe({running(0, 100), {1, std::nullopt, std::nullopt, Probe::none, ""}}, t0, false);
  EXPECT_EQ(gang.observe({{1, std::nullopt, std::nullopt, Probe::none, ""}}, t0 + 31s, false),
            GangAction::stop_others);
  EXPECT_EQ(gang.state().workers[1].detail, "its job never started (no pid record)");
}

TEST(GangMonitor, GiveUpTurnsRestartingIntoFailed) {
  GangPolicy policy;
  policy.max_attempts = 2;
  GangMonitor gang(policy, {0});
  gang.observe({exited(0, 4)}, t0, false);
  gang.observe({}, t0, false);
  gang.give_up();
  EXPECT_EQ(gang.state().verdict, RunVerdict::failed);
  // An ended run never shows a worker "restarting" (issue 39, finding 17).
  EXPECT_EQ(gang.state().workers.at(0).state, WorkerState::stopped);
  EXPECT_EQ(gang.state().workers.at(0).detail, "exited 4; the run ended before its restart");
}

TEST(DescribeExit, CodesAndSignals) {
  EXPECT_EQ(exit_code_text(3), "exited 3");
  EXPECT_EQ(exit_code_text(143), "killed by SIGTERM");
  EXPECT_EQ(exit_code_text(255), "exited 255");
}

}  // namespace
}  // namespace tpurun

namespace tpurun {
namespace {

TEST(GangPreemption, ALostGangWhoseTpuVmIsGoneEndsPreempted) {
  GangMonitor gang(GangPolicy{}, {0, 1});
  Preemption preempted;
  preempted.tpu = "v4";
  preempted.state = "PREEMPTED";
  preempted.detail = "TPU VM v4 is PREEMPTED";
  preempted.at = "2026-01-01T00:00:00Z";
  gang.preempted(preempted);
  EXPECT_EQ(gang.state().verdict, RunVerdict::preempted);
  ASSERT_EQ(gang.state().preemptions.size(), 1u);
  EXPECT_EQ(gang.state().preemptions[0].attempt, 1);
  // a later preemption of a finished run changes nothing
  preempted.state = "TERMINATED";
  gang.preempted(preempted);
  EXPECT_EQ(gang.state().preemptions.size(), 1u);
}

}  // namespace
}  // namespace tpurun

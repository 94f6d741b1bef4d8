// Stalled runs: the rule (every worker at 0% duty cycle, no new log line, for
// --stall-after) and what the gang does with a stall under --on-stall.
#include "runs/watcher/stall_rule.hpp"

#include <gtest/gtest.h>

#include "runs/watcher/gang.hpp"

namespace tpurun {
namespace {

using namespace std::chrono_literals;
using Time = StallRule::Time;
const Time t0 = Time{} + 1000h;

TpuMetricsOutcome chips(std::vector<double> duty) {
  TpuFigures f;
  for (size_t i = 0; i < duty.size(); ++i) f.chips.push_back({static_cast<int64_t>(i), 1, 2, duty[i]});
  return f;
}

TEST(GangIdle, EveryChipOfEveryWorkerAtZero) {
  EXPECT_EQ(gang_idle({chips({0, 0}), chips({0, 0})}), true);
  EXPECT_EQ(gang_idle({chips({0, 0}), chips({0, 12.5})}), false);
  // A busy chip decides even if another worker is unknown.
  EXPECT_EQ(gang_idle({NoTpuWorkload{}, chips({40})}), false);
  // Unknown: a worker without figures, or figures without a duty cycle.
  EXPECT_EQ(gang_idle({chips({0}), NoTpuWorkload{}}), std::nullopt);
  EXPECT_EQ(gang_idle({chips({0}), MetricsFailure{"x", ErrorKind::timeout, std::nullopt}}), std::nullopt);
  EXPECT_EQ(gang_idle({TpuFigures{{{0, 1, 2, std::nullopt}}, {}}}), std::nullopt);
  EXPECT_EQ(gang_idle({}), std::nullopt);
}

TEST(StallRule, QuietForTheWholeStretchIsAStall) {
  StallRule watch(30s);
  EXPECT_FALSE(watch.observe(true, false, t0));
  EXPECT_FALSE(watch.observe(true, false, t0 + 29s));
  auto since = watch.observe(true, false, t0 + 30s);
  ASSERT_TRUE(since);
  EXPECT_EQ(*since, t0);
  EXPECT_EQ(watch.observe(true, false, t0 + 90s), t0);  // still stalled, since the same time
}

TEST(StallRule, ALogLineOrABusyChipOrNotKnowingStartsOver) {
  StallRule watch(30s);
  watch.observe(true, false, t0);
  EXPECT_FALSE(watch.observe(true, true, t0 + 20s));  // a new log line
  EXPECT_FALSE(watch.observe(true, false, t0 + 40s));  // quiet again from t0+40s
  EXPECT_FALSE(watch.observe(false, false, t0 + 60s));  // a chip at work
  EXPECT_FALSE(watch.observe(true, false, t0 + 70s));
  EXPECT_FALSE(watch.observe(std::nullopt, false, t0 + 80s));  // a worker without figures
  EXPECT_FALSE(watch.observe(true, false, t0 + 90s));
  EXPECT_EQ(watch.observe(true, false, t0 + 120s), t0 + 90s);
  watch.reset();
  EXPECT_FALSE(watch.observe(true, false, t0 + 121s));
}

TEST(StallPoll, SixLooksPerStretchWithinBounds) {
  EXPECT_EQ(stall_poll_interval(30min), 30s);
  EXPECT_EQ(stall_poll_interval(60s), 10s);
  EXPECT_EQ(stall_poll_interval(3s), 1s);
}

std::vector<WorkerSample> running(int n) {
  std::vector<WorkerSample> s;
  for (int i = 0; i < n; ++i) s.push_back({i, 100 + i, std::nullopt, Probe::none, ""});
  return s;
}

TEST(GangStall, OnStallStopFailsTheRunWithoutARestart) {
  // Given a 2-worker run with restarts left
  GangPolicy policy;
  policy.max_attempts = 3;
  GangMonitor gang(policy, {0, 1});
  EXPECT_EQ(gang.observe(running(2), t0, false), GangAction::watch);
  // When it stalls under --on-stall stop
  gang.stalled(t0 + 1s, "stalled: every worker at 0% duty cycle and no new log line since X", false);
  // Then the whole gang is stopped, every worker counts as stopped by tpurun,
  // and the run fails with the stall as its cause, with no restart.
  EXPECT_EQ(gang.observe(running(2), t0 + 2s, false), GangAction::stop_others);
  gang.others_stopped();
  EXPECT_EQ(gang.observe({{0, 100, 143, Probe::none, ""}, {1, 101, 143, Probe::none, ""}}, t0 + 3s, false),
            GangAction::finished);
  const RunState& s = gang.state();
  EXPECT_EQ(s.verdict, RunVerdict::failed);
  ASSERT_TRUE(s.first_failure);
  EXPECT_EQ(s.first_failure->how, "stalled");
  EXPECT_EQ(s.first_failure->worker, -1);
  EXPECT_EQ(s.workers[0].state, WorkerState::stopped);
  EXPECT_EQ(s.workers[1].state, WorkerState::stopped);
}

TEST(GangStall, OnStallRestartRelaunchesWithinRestartsEvenWithOnFailureContinue) {
  GangPolicy policy;
  policy.max_attempts = 2;
  policy.stop_on_failure = false;  // --on-failure continue: a stall still stops the gang
  GangMonitor gang(policy, {0});
  gang.observe(running(1), t0, false);
  gang.stalled(t0 + 1s, "stalled", true);
  EXPECT_EQ(gang.observe(running(1), t0 + 2s, false), GangAction::stop_others);
  gang.others_stopped();
  EXPECT_EQ(gang.observe({{0, 100, 143, Probe::none, ""}}, t0 + 3s, false), GangAction::restart);
  gang.begin_attempt(2);
  // The next attempt may stall again; with no attempt left it fails.
  gang.observe(running(1), t0 + 4s, false);
  gang.stalled(t0 + 5s, "stalled", true);
  EXPECT_EQ(gang.observe(running(1), t0 + 6s, false), GangAction::stop_others);
  EXPECT_EQ(gang.observe({{0, 100, 137, Probe::none, ""}}, t0 + 7s, false), GangAction::finished);
  EXPECT_EQ(gang.state().verdict, RunVerdict::failed);
}

TEST(GangStall, AFailureFirstIsNotOverwrittenByALaterStall) {
  GangMonitor gang({}, {0, 1});
  gang.observe(running(2), t0, false);
  EXPECT_EQ(gang.observe({{0, 100, 3, Probe::none, ""}}, t0 + 1s, false), GangAction::stop_others);
  gang.stalled(t0 + 2s, "stalled", false);
  EXPECT_EQ(gang.state().first_failure->worker, 0);
  EXPECT_EQ(gang.state().first_failure->how, "exit");
}

}  // namespace
}  // namespace tpurun

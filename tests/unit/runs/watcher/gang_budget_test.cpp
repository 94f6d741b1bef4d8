// The restart budget: which failures may restart (--restart-on-exit-codes),
// and preemptions that use up no restart (--recreate, --max-preemptions).
#include <gtest/gtest.h>

#include "runs/watcher/gang.hpp"
#include "tpurun/runs/watcher/restart_codes.hpp"

namespace tpurun {
namespace {

using namespace std::chrono_literals;
using Time = GangMonitor::Time;

const Time t0 = Time{} + 1000h;

WorkerSample exited(int w, int code) { return {w, 100 + w, code, Probe::none, ""}; }
WorkerSample unreachable(int w) { return {w, 100 + w, std::nullopt, Probe::unreachable, "refused"}; }

Preemption preemption() {
  Preemption p;
  p.tpu = "rc";
  p.state = "PREEMPTED";
  p.detail = "TPU VM rc is PREEMPTED";
  p.at = "2026-01-01T00:00:00Z";
  return p;
}

// Worker 0 exits `code` first; worker 1 is stopped by tpurun.
GangAction fail_with(GangMonitor& gang, int code) {
  gang.observe({exited(0, code)}, t0, false);
  gang.others_stopped();
  return gang.observe({exited(1, 143)}, t0 + 1s, false);
}

// Both workers' host is gone: lost after --lost-after (10s here).
GangAction lose_both(GangMonitor& gang, Time from) {
  gang.observe({unreachable(0), unreachable(1)}, from, false);
  gang.observe({unreachable(0), unreachable(1)}, from + 11s, false);
  return gang.observe({}, from + 12s, false);
}

TEST(RestartCodes, XpksDefaultsPlusTheListedOnes) {
  const RestartCodes defaults = RestartCodes::xpk_defaults();
  EXPECT_TRUE(defaults.contains(42));
  EXPECT_TRUE(defaults.contains(137));
  EXPECT_TRUE(defaults.contains(255));
  EXPECT_FALSE(defaults.contains(1));
  EXPECT_FALSE(defaults.contains(126));
  EXPECT_EQ(defaults.text(), "42,127-255");
  auto more = RestartCodes::parse(" 1, 3-5,43,100-200");
  ASSERT_TRUE(more);
  EXPECT_TRUE(more->contains(4));
  EXPECT_FALSE(more->contains(2));
  EXPECT_EQ(more->text(), "1,3-5,42-43,100-255");
  EXPECT_EQ(RestartCodes::parse("")->text(), "42,127-255");
}

TEST(RestartCodes, NonsenseIsRefusedWithTheReason) {
  std::string why;
  EXPECT_FALSE(RestartCodes::parse("0", &why));
  EXPECT_NE(why.find("'0' is not an exit code (1-255)"), std::string::npos);
  EXPECT_FALSE(RestartCodes::parse("1,,2", &why));
  EXPECT_FALSE(RestartCodes::parse("5-3", &why));
  EXPECT_FALSE(RestartCodes::parse("256", &why));
  EXPECT_FALSE(RestartCodes::parse("x", &why));
}

TEST(GangBudget, AnExitCodeOutsideTheRetryableOnesEndsTheRun) {
  GangPolicy policy;
  policy.max_attempts = 3;
  policy.restart_on = RestartCodes::xpk_defaults();
  GangMonitor gang(policy, {0, 1});
  // exit 1 is a bug, not something a restart fixes
  EXPECT_EQ(fail_with(gang, 1), GangAction::finished);
  EXPECT_EQ(gang.state().verdict, RunVerdict::failed);
  EXPECT_FALSE(gang.retryable());
}

TEST(GangBudget, RetryableCodesAndALostWorkerRestart) {
  GangPolicy policy;
  policy.max_attempts = 3;
  policy.lost_after = 10s;
  policy.restart_on = RestartCodes::xpk_defaults();
  GangMonitor gang(policy, {0, 1});
  EXPECT_EQ(fail_with(gang, 42), GangAction::restart);
  gang.begin_attempt(2);
  EXPECT_EQ(lose_both(gang, t0 + 1min), GangAction::restart);  // lost counts as 255
}

TEST(GangBudget, WithoutTheFlagEveryFailureMayRestart) {
  GangPolicy policy;
  policy.max_attempts = 2;
  GangMonitor gang(policy, {0, 1});
  EXPECT_EQ(fail_with(gang, 1), GangAction::restart);
}

TEST(GangBudget, APreemptionUsesUpNoRestart) {
  // --restarts 0 --recreate
  GangPolicy policy;
  policy.lost_after = 10s;
  policy.recreate = true;
  GangMonitor gang(policy, {0, 1});
  EXPECT_EQ(lose_both(gang, t0), GangAction::finished);
  EXPECT_EQ(gang.state().verdict, RunVerdict::lost);
  // the watcher finds the TPU VM preempted: one more attempt, none of the restarts
  EXPECT_TRUE(gang.preempted(preemption()));
  EXPECT_EQ(gang.state().verdict, RunVerdict::restarting);
  EXPECT_EQ(gang.state().max_attempts, 2);
  EXPECT_EQ(gang.state().preemptions.at(0).attempt, 1);
  gang.begin_attempt(2);
  gang.observe({exited(0, 0), exited(1, 0)}, t0 + 1min, false);
  EXPECT_EQ(gang.state().verdict, RunVerdict::succeeded);
}

TEST(GangBudget, APreemptionFoundOnARestartGivesTheRestartBack) {
  GangPolicy policy;
  policy.max_attempts = 2;  // --restarts 1
  policy.lost_after = 10s;
  policy.recreate = true;
  GangMonitor gang(policy, {0, 1});
  EXPECT_EQ(lose_both(gang, t0), GangAction::restart);
  EXPECT_TRUE(gang.preempted(preemption()));
  EXPECT_EQ(gang.state().max_attempts, 3);  // attempt 2 is the preemption's, attempt 3 still the restart's
}

TEST(GangBudget, MaxPreemptionsEndsTheRunPreempted) {
  GangPolicy policy;
  policy.lost_after = 10s;
  policy.recreate = true;
  policy.max_preemptions = 1;
  GangMonitor gang(policy, {0, 1});
  lose_both(gang, t0);
  EXPECT_TRUE(gang.preempted(preemption()));
  gang.begin_attempt(2);
  EXPECT_EQ(lose_both(gang, t0 + 1min), GangAction::finished);
  EXPECT_FALSE(gang.preempted(preemption()));
  EXPECT_EQ(gang.state().verdict, RunVerdict::preempted);
  EXPECT_EQ(gang.state().preemptions.size(), 2u);
  EXPECT_EQ(gang.state().preemptions.at(1).attempt, 2);
}

TEST(GangBudget, WithoutRecreateAPreemptionEndsTheRun) {
  GangPolicy policy;
  policy.max_attempts = 5;
  GangMonitor gang(policy, {0, 1});
  EXPECT_FALSE(gang.preempted(preemption()));
  EXPECT_EQ(gang.state().verdict, RunVerdict::preempted);
}

TEST(GangBudget, ARecreateThatFailsEndsTheRunAndSaysWhy) {
  GangPolicy policy;
  policy.lost_after = 10s;
  policy.recreate = true;
  GangMonitor gang(policy, {0, 1});
  lose_both(gang, t0);
  ASSERT_TRUE(gang.preempted(preemption()));
  gang.recreate_failed("pod 'rc' is claimed by bob");
  EXPECT_EQ(gang.state().verdict, RunVerdict::preempted);
  EXPECT_EQ(gang.state().max_attempts, 1);
  EXPECT_EQ(gang.state().preemptions.at(0).action, "not recreated");
  EXPECT_EQ(gang.state().preemptions.at(0).why, "pod 'rc' is claimed by bob");
  for (const WorkerStatus& w : gang.state().workers) {
    EXPECT_EQ(w.state, WorkerState::stopped);
    EXPECT_NE(w.detail.find("not recreated: pod 'rc' is claimed by bob"), std::string::npos) << w.detail;
  }
}

TEST(GangBudget, AResumedWatcherKeepsTheAttemptsEarlierPreemptionsGranted) {
  GangPolicy policy;
  policy.recreate = true;
  GangMonitor gang(policy, {0, 1}, 2);
  Preemption earlier = preemption();
  earlier.action = "recreated";
  gang.resume({earlier});
  EXPECT_EQ(gang.state().max_attempts, 2);
  EXPECT_EQ(gang.state().preemptions.size(), 1u);
}

// --restarts 0 --recreate --max-preemptions N; both workers lost, the VM found
// preempted: the recreate is granted an attempt.
GangMonitor preempted_once(const GangPolicy& policy) {
  GangMonitor gang(policy, {0, 1});
  lose_both(gang, t0);
  EXPECT_TRUE(gang.preempted(preemption()));
  return gang;
}

GangPolicy recreate_policy(int max_preemptions) {
  GangPolicy policy;
  policy.lost_after = 10s;
  policy.recreate = true;
  policy.max_preemptions = max_preemptions;
  return policy;
}

// Issue 39, finding 11: the new VM preempted during the recreate's setup.
TEST(GangBudget, APreemptionDuringTheRecreateCountsAndGrantsNoSecondAttempt) {
  const GangPolicy policy = recreate_policy(3);
  GangMonitor gang = preempted_once(policy);
  gang.last_preemption()->action = "recreated";
  EXPECT_TRUE(gang.preempted_while_recreating(preemption()));
  EXPECT_EQ(gang.state().verdict, RunVerdict::restarting);
  EXPECT_EQ(gang.state().preemptions.size(), 2u);
  EXPECT_EQ(gang.state().preemptions.at(1).attempt, 1);  // no attempt ran on the VM it took
  EXPECT_EQ(gang.state().max_attempts, 2);                // still one attempt more, not two
  gang.last_preemption()->action = "recreated";
  // a watcher that picks the run up counts the attempt once too
  GangMonitor resumed(policy, {0, 1}, 2);
  resumed.resume(gang.state().preemptions);
  EXPECT_EQ(resumed.state().max_attempts, 2);
}

TEST(GangBudget, APreemptionDuringTheRecreateOverTheBudgetEndsTheRun) {
  GangMonitor gang = preempted_once(recreate_policy(1));
  EXPECT_FALSE(gang.preempted_while_recreating(preemption()));
  EXPECT_EQ(gang.state().verdict, RunVerdict::preempted);
  EXPECT_EQ(gang.state().max_attempts, 1);
  EXPECT_EQ(gang.state().preemptions.at(1).action, "not recreated");
  EXPECT_EQ(gang.state().preemptions.at(1).why, "2 preemptions, and --max-preemptions 1 allows 1");
}

// Issue 39, findings 9 and 10: `tpurun down`, or kill --run, while the VM is away.
TEST(GangBudget, StoppedOnPurposeBetweenAttemptsEndsTheRunStoppedWithoutARestart) {
  GangPolicy policy;
  policy.max_attempts = 3;  // --restarts 2
  policy.lost_after = 10s;
  GangMonitor gang(policy, {0, 1});
  EXPECT_EQ(lose_both(gang, t0), GangAction::restart);
  gang.stopped_on_purpose("`tpurun down` (...) asked for TPU VM rc to be deleted");
  EXPECT_EQ(gang.state().verdict, RunVerdict::stopped);
  for (const WorkerStatus& w : gang.state().workers) {
    EXPECT_EQ(w.state, WorkerState::stopped);
    EXPECT_NE(w.detail.find("`tpurun down`"), std::string::npos) << w.detail;
  }
  // a run that succeeded before the down stays so
  GangMonitor done(policy, {0, 1});
  done.observe({exited(0, 0), exited(1, 0)}, t0, false);
  done.stopped_on_purpose("down");
  EXPECT_EQ(done.state().verdict, RunVerdict::succeeded);
}

}  // namespace
}  // namespace tpurun

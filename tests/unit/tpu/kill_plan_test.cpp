#include <gtest/gtest.h>

#include <algorithm>

#include "scan_fixtures.hpp"
#include "tpurun/tpu/kill.hpp"

namespace tpurun {
namespace {

using testing::empty_scan;
using testing::holder;
using testing::proc;

constexpr int kAlice = 1001, kBob = 1002, kRoot = 0;

std::vector<int> victim_pids(const KillPlan& plan) {
  std::vector<int> pids;
  for (const Victim& v : plan.victims) pids.push_back(v.process.pid);
  return pids;
}

// Puts the holders into the process table too, as a kill-mode scan has them.
LockScan with_table(LockScan s, std::vector<ScannedProcess> others) {
  for (const ScannedProcess& h : s.holders) others.push_back(h);
  others.push_back(proc(1, kRoot, 0, 0, "init"));
  others.push_back(proc(900, kRoot, 0, 1, "sh -s -- kill"));  // the scan itself
  s.processes = std::move(others);
  std::sort(s.processes.begin(), s.processes.end(), [](auto& a, auto& b) { return a.pid < b.pid; });
  return s;
}

// Given alice's trainer whose children share its group and whose grandchild
// started its own session, when she kills, then the whole tree goes, and
// each group made only of her victims is signalled as a group.
TEST(PlanKillTest, OwnTreeWithChildrenInTheSameAndAnotherGroup) {
  LockScan s = empty_scan();
  s.holders = {holder(proc(100, kAlice, 100, 1)), holder(proc(101, kAlice, 100, 100))};
  s = with_table(s, {proc(102, kAlice, 100, 100, "python3 worker"), proc(103, kAlice, 103, 101, "ray::actor"),
                     proc(104, kAlice, 103, 103, "ray::sub")});

  KillPlan plan = plan_kill(s, {});

  EXPECT_EQ(victim_pids(plan), (std::vector<int>{100, 101, 102, 103, 104}));
  EXPECT_EQ(plan.groups, (std::vector<int>{100, 103}));
  EXPECT_FALSE(plan.needs_root);
  EXPECT_TRUE(plan.spared.empty());
  EXPECT_EQ(plan.victims[0].reason, "holds /dev/accel0");
  EXPECT_EQ(plan.victims[2].reason, "in group 100");
  EXPECT_EQ(plan.victims[3].reason, "child of 101");
}

// A group that also holds a root process (alice's job ran `sudo x`) is never
// signalled as a group: alice's processes are signalled one by one.
TEST(PlanKillTest, GroupMixingUsersIsSignalledPidByPid) {
  LockScan s = empty_scan();
  s.holders = {holder(proc(200, kAlice, 200, 1))};
  s = with_table(s, {proc(201, kAlice, 200, 200), proc(202, kRoot, 200, 200, "sudo x"),
                     proc(203, kRoot, 200, 202, "x"), proc(204, kAlice, 200, 203, "x --as-alice")});

  KillPlan plan = plan_kill(s, {});

  EXPECT_EQ(victim_pids(plan), (std::vector<int>{200, 201, 204}));
  EXPECT_TRUE(plan.groups.empty());
}

TEST(PlanKillTest, OtherUsersHoldersAreListedNeverSignalled) {
  LockScan s = empty_scan();
  s.holders = {holder(proc(300, kBob, 300, 1)), holder(proc(301, kBob, 300, 300))};
  s = with_table(s, {proc(302, kAlice, 300, 301, "alice in bob's group?")});

  KillPlan plan = plan_kill(s, {});

  EXPECT_TRUE(plan.empty());
  ASSERT_EQ(plan.spared.size(), 2u);
  EXPECT_EQ(plan.spared[0].user, "bob");
  EXPECT_FALSE(plan.needs_root);
}

TEST(PlanKillTest, ForceTakesOtherUsersTreesOfTheirOwnUidOnly) {
  LockScan s = empty_scan();
  s.holders = {holder(proc(300, kBob, 300, 1))};
  s = with_table(s, {proc(301, kBob, 300, 300), proc(302, kRoot, 300, 300, "sudo tool")});

  KillPlan plan = plan_kill(s, {std::nullopt, true});

  EXPECT_EQ(victim_pids(plan), (std::vector<int>{300, 301}));
  EXPECT_TRUE(plan.groups.empty());  // root's sudo is in that group
  EXPECT_TRUE(plan.needs_root);
  EXPECT_TRUE(plan.spared.empty());
  EXPECT_NE(plan.victims[0].reason.find("--force"), std::string::npos);
}

// tpurun jobs are found by TPURUN_RUN_ID even before they open a device;
// --run keeps to one run, and the caller's other holders are left alone.
TEST(PlanKillTest, RunFilter) {
  LockScan s = empty_scan();
  s.holders = {holder(proc(500, kAlice, 500, 1, "python3 b.py", "run-b"))};
  s = with_table(
      s, {proc(400, kAlice, 400, 1, "sh -c launch", "run-a"),
          proc(401, kAlice, 400, 400, "python3 a.py", "run-a"), proc(600, kAlice, 600, 1, "vim notes")});

  KillPlan only_a = plan_kill(s, {std::string("run-a"), false});
  EXPECT_EQ(victim_pids(only_a), (std::vector<int>{400, 401}));
  ASSERT_EQ(only_a.kept_own.size(), 1u);
  EXPECT_EQ(only_a.kept_own[0].pid, 500);

  KillPlan all = plan_kill(s, {});
  EXPECT_EQ(victim_pids(all), (std::vector<int>{400, 401, 500}));  // never vim: no run id, no device
  EXPECT_TRUE(all.kept_own.empty());
}

TEST(PlanKillTest, RunByUniquePrefix) {
  LockScan s = empty_scan();
  s = with_table(s, {proc(400, kAlice, 400, 1, "a", "20240419_000859_d4awst_v4-32_b1024"),
                     proc(500, kAlice, 500, 1, "b", "20240419_000859_zz0000_v4-32"),
                     proc(600, kBob, 600, 1, "c", "20240419_000859_d4awst_bobs")});

  EXPECT_EQ(victim_pids(plan_kill(s, {std::string("20240419_000859_d4"), false})), std::vector<int>{400});
  KillPlan ambiguous = plan_kill(s, {std::string("20240419_000859_"), false});
  EXPECT_TRUE(ambiguous.empty());
  EXPECT_EQ(ambiguous.ambiguous_runs.size(), 2u);  // bob's run is not a candidate
  EXPECT_TRUE(plan_kill(s, {std::string("2025"), false}).empty());
}

// The scan's own shell and its ancestors (tpurun itself on a local pod, where
// TPURUN_RUN_ID may be inherited) are never killed, whatever their group.
TEST(PlanKillTest, NeverTheScannerOrItsAncestors) {
  LockScan s = empty_scan();
  s.self_pid = 702;
  s.holders = {holder(proc(710, kAlice, 700, 700))};
  s.processes = {proc(1, kRoot, 0, 0), proc(700, kAlice, 700, 1, "bash job.sh", "run-x"),
                 proc(701, kAlice, 700, 700, "tpurun kill", "run-x"),
                 proc(702, kAlice, 700, 701, "sh -s", "run-x"), holder(proc(710, kAlice, 700, 700))};

  KillPlan plan = plan_kill(s, {});

  EXPECT_EQ(victim_pids(plan), (std::vector<int>{710}));
  EXPECT_TRUE(plan.groups.empty());  // the group holds protected processes
}

TEST(PlanKillTest, GroupOutsideTheNamespaceIsNotTaken) {
  LockScan s = empty_scan();
  s.holders = {holder(proc(50, kAlice, 0, 0))};
  s = with_table(s, {proc(51, kAlice, 0, 0, "unrelated login shell")});

  KillPlan plan = plan_kill(s, {});

  EXPECT_EQ(victim_pids(plan), (std::vector<int>{50}));
  EXPECT_TRUE(plan.groups.empty());
}

TEST(PlanKillTest, OwnLockHolderIsATarget) {
  LockScan s = empty_scan();
  s.lockfile = {true, FileOwner{kAlice, "alice"}, 3, true, 60};
  s.lock_holder = proc(60, kAlice, 60, 1);
  s = with_table(s, {*s.lock_holder});
  KillPlan plan = plan_kill(s, {});
  EXPECT_EQ(victim_pids(plan), (std::vector<int>{60}));
  EXPECT_EQ(plan.victims[0].reason, "holds the libtpu lock");
}

TEST(PlanCleanupTest, NothingWhileAnyProcessHoldsADeviceOrTheLock) {
  LockScan s = empty_scan();
  s.lockfile = {true, FileOwner{kBob, "bob"}, 3, false, std::nullopt};
  s.tpu_logs = FileOwner{kBob, "bob"};
  s.holders = {holder(proc(10, kAlice, 10, 1))};
  EXPECT_TRUE(plan_cleanup(s).empty());
  EXPECT_NE(plan_cleanup(s).blocked.find("holds a TPU device"), std::string::npos);
  s.holders.clear();
  s.lockfile.held = true;
  s.lockfile.holder_pid = 10;
  EXPECT_TRUE(plan_cleanup(s).empty());
}

TEST(PlanCleanupTest, AnotherUsersStaleFilesGoWithRootViewAndSudo) {
  LockScan s = empty_scan();
  s.lockfile = {true, FileOwner{kBob, "bob"}, 42, false, std::nullopt};
  s.tpu_logs = FileOwner{kBob, "bob"};
  CleanupPlan plan = plan_cleanup(s);
  EXPECT_TRUE(plan.remove_lockfile);
  EXPECT_EQ(plan.lock_inode, 42u);
  EXPECT_TRUE(plan.remove_tpu_logs);
  EXPECT_TRUE(plan.needs_root);
}

TEST(PlanCleanupTest, OwnFilesNeedNoSudo) {
  LockScan s = empty_scan();
  s.lockfile = {true, FileOwner{kAlice, "alice"}, 42, false, std::nullopt};
  EXPECT_TRUE(plan_cleanup(s).remove_lockfile);
  EXPECT_FALSE(plan_cleanup(s).needs_root);
}

TEST(PlanCleanupTest, WithoutRootViewOnlyOwnFiles) {
  LockScan s = empty_scan();
  s.privileged = false;
  s.lockfile = {true, FileOwner{kBob, "bob"}, 42, false, std::nullopt};
  s.tpu_logs = FileOwner{kAlice, "alice"};
  CleanupPlan plan = plan_cleanup(s);
  EXPECT_FALSE(plan.remove_lockfile);
  EXPECT_TRUE(plan.remove_tpu_logs);
  EXPECT_FALSE(plan.needs_root);
  EXPECT_NE(plan.blocked.find("without sudo"), std::string::npos);
}

// --dry-run predicts: once alice's job is gone, its SIGKILLed lockfile would
// be stale and removed.
TEST(AssumeKilledTest, VictimsAndTheirLockDisappear) {
  LockScan s = empty_scan();
  s.holders = {holder(proc(100, kAlice, 100, 1)), holder(proc(300, kBob, 300, 1))};
  s.lockfile = {true, FileOwner{kAlice, "alice"}, 3, true, 100};
  s = with_table(s, {});
  KillPlan plan = plan_kill(s, {});
  LockScan after = assume_killed(s, plan);
  ASSERT_EQ(after.holders.size(), 1u);
  EXPECT_EQ(after.holders[0].pid, 300);
  EXPECT_FALSE(after.lockfile.held);
  EXPECT_TRUE(plan_cleanup(after).empty());  // bob still holds a device
  after.holders.clear();
  EXPECT_TRUE(plan_cleanup(after).remove_lockfile);
}

TEST(AfterCleanupTest, RemovedFilesAreGoneFromTheScan) {
  LockScan s = empty_scan();
  s.lockfile = {true, FileOwner{kBob, "bob"}, 3, false, std::nullopt};
  s.tpu_logs = FileOwner{kBob, "bob"};
  EXPECT_EQ(state_from_scan(s), TpuState::stale_lock);
  LockScan after = after_cleanup(s, {{kLibtpuLockfile, kTpuLogsDir}, {}, ""});
  EXPECT_EQ(state_from_scan(after), TpuState::free);
  EXPECT_FALSE(after.tpu_logs);
}

}  // namespace
}  // namespace tpurun

#include <gtest/gtest.h>

#include "scan_fixtures.hpp"
#include "tpurun/tpu/scan.hpp"

namespace tpurun {
namespace {

using testing::empty_scan;
using testing::holder;
using testing::proc;

TEST(StateFromScanTest, NothingAnywhereWithRootViewIsFree) { EXPECT_EQ(state_from_scan(empty_scan()), TpuState::free); }

// A host with no TPU device file (not a TPU VM): said so, even when the view
// of other users' processes is partial (no sudo, or root without ptrace in a
// container); a held lock still counts.
TEST(StateFromScanTest, NoDeviceFileIsNoDeviceNotPartial) {
  LockScan s = empty_scan();
  s.device_files = 0;
  EXPECT_EQ(state_from_scan(s), TpuState::no_device);
  s.privileged = false;
  s.denied = 3;
  EXPECT_EQ(state_from_scan(s), TpuState::no_device);
  s.lockfile = {true, FileOwner{1002, "bob"}, 3, true, 55};
  s.lock_holder = proc(55, 1002, 55, 1);
  EXPECT_EQ(state_from_scan(s), TpuState::busy_other);
  LockScan counted = empty_scan();
  counted.device_files = 4;
  EXPECT_EQ(state_from_scan(counted), TpuState::free);
}

TEST(StateFromScanTest, AnotherUsersHolderIsBusyOther) {
  LockScan s = empty_scan();
  s.holders = {holder(proc(10, 1001, 10, 1)), holder(proc(20, 1002, 20, 1))};
  EXPECT_EQ(state_from_scan(s), TpuState::busy_other);
}

TEST(StateFromScanTest, OnlyOwnHoldersIsBusySelf) {
  LockScan s = empty_scan();
  s.holders = {holder(proc(10, 1001, 10, 1)), holder(proc(11, 1001, 10, 10))};
  EXPECT_EQ(state_from_scan(s), TpuState::busy_self);
}

TEST(StateFromScanTest, LockHeldByAnotherUserWithoutDevicesIsBusyOther) {
  LockScan s = empty_scan();
  s.lockfile = {true, FileOwner{1002, "bob"}, 3, true, 55};
  s.lock_holder = proc(55, 1002, 55, 1);
  EXPECT_EQ(state_from_scan(s), TpuState::busy_other);
}

TEST(StateFromScanTest, LockHeldByUnidentifiedProcessCountsAsAnotherUsers) {
  LockScan s = empty_scan();
  s.lockfile = {true, FileOwner{1001, "alice"}, 3, true, 0};
  EXPECT_EQ(state_from_scan(s), TpuState::busy_other);
}

TEST(StateFromScanTest, OwnLockHolderStartingUpIsBusySelf) {
  LockScan s = empty_scan();
  s.lockfile = {true, FileOwner{1001, "alice"}, 3, true, 55};
  s.lock_holder = proc(55, 1001, 55, 1);
  EXPECT_EQ(state_from_scan(s), TpuState::busy_self);
}

TEST(StateFromScanTest, LockfileNobodyHoldsIsStaleWhoeverOwnsIt) {
  LockScan s = empty_scan();
  s.lockfile = {true, FileOwner{1002, "bob"}, 3, false, std::nullopt};
  EXPECT_EQ(state_from_scan(s), TpuState::stale_lock);
  s.lockfile.owner = FileOwner{1001, "alice"};
  EXPECT_EQ(state_from_scan(s), TpuState::stale_lock);
}

TEST(StateFromScanTest, AnotherUsersTpuLogsAloneIsStillFree) {
  LockScan s = empty_scan();
  s.tpu_logs = FileOwner{1002, "bob"};
  EXPECT_EQ(state_from_scan(s), TpuState::free);
}

// Without root, other users' open devices are invisible: never "free".
TEST(StateFromScanTest, UnprivilegedScanIsNeverFree) {
  LockScan s = empty_scan();
  s.privileged = false;
  EXPECT_EQ(state_from_scan(s), TpuState::partial);
  s.denied = 3;
  EXPECT_EQ(state_from_scan(s), TpuState::partial);
  s.lockfile = {true, FileOwner{1002, "bob"}, 3, false, std::nullopt};
  EXPECT_EQ(state_from_scan(s), TpuState::partial);  // not even "stale": a holder may be hidden
}

TEST(StateFromScanTest, UnprivilegedScanCanStillProveBusy) {
  LockScan s = empty_scan();
  s.privileged = false;
  s.lockfile = {true, FileOwner{1002, "bob"}, 3, true, 55};
  s.lock_holder = proc(55, 1002, 55, 1);
  EXPECT_EQ(state_from_scan(s), TpuState::busy_other);
  LockScan own = empty_scan();
  own.privileged = false;
  own.holders = {holder(proc(10, 1001, 10, 1))};
  EXPECT_EQ(state_from_scan(own), TpuState::busy_self);
}

TEST(StateFromScanTest, RootScanThatCouldNotReadSomeProcessesIsPartial) {
  LockScan s = empty_scan();
  s.denied = 1;
  EXPECT_EQ(state_from_scan(s), TpuState::partial);
}

TEST(TpuStateTest, Names) {
  EXPECT_STREQ(to_string(TpuState::free), "free");
  EXPECT_STREQ(to_string(TpuState::busy_self), "busy-self");
  EXPECT_STREQ(to_string(TpuState::busy_other), "busy-other");
  EXPECT_STREQ(to_string(TpuState::stale_lock), "stale-lock");
  EXPECT_STREQ(to_string(TpuState::partial), "partial");
  EXPECT_STREQ(to_string(TpuState::unreachable), "unreachable");
  EXPECT_STREQ(to_string(TpuState::error), "error");
}

}  // namespace
}  // namespace tpurun

// stage and doctor: a user whose uid or gid differs on some workers is
// refused before anything is staged, with the numbers and the fixes.
#include "tpurun/doctor/uids.hpp"

#include <gmock/gmock.h>

#include "../tpu/scan_fixtures.hpp"
#include "fake_transport.hpp"

namespace tpurun {
namespace {

using ::testing::HasSubstr;

std::vector<WorkerScanResult> scans(const std::vector<std::pair<int, int>>& ids) {
  std::vector<WorkerScanResult> out;
  auto workers = testing::make_workers(static_cast<int>(ids.size()));
  for (size_t i = 0; i < ids.size(); ++i) {
    LockScan s = testing::empty_scan();
    s.caller_user = "alice";
    s.caller_uid = ids[i].first;
    s.caller_gid = ids[i].second;
    out.push_back({workers[i], TpuState::free, s, ""});
  }
  return out;
}

TEST(UidMismatchTest, NamesBothNumbersTheWorkersAndTheFixes) {
  // Given alice is 1001:1001 here, and 1002:1002 on workers 1 and 2
  const std::string why = uid_mismatch("alice", 1001, 1001, scans({{1001, 1001}, {1002, 1002}, {1002, 1002}}));
  EXPECT_THAT(why, HasSubstr("you are uid 1001 gid 1001 on this host, but\n  w[1-2]: alice is uid 1002 gid 1002 there"));
  EXPECT_THAT(why, HasSubstr("enable-oslogin=TRUE"));
  EXPECT_THAT(why, HasSubstr("sudo groupmod -g 1001 alice && sudo usermod -u 1001 -g 1001 alice"));
}

TEST(UidMismatchTest, AGroupAloneDiffersToo) {
  EXPECT_THAT(uid_mismatch("alice", 1001, 1001, scans({{1001, 100}})), HasSubstr("w0: alice is uid 1001 gid 100"));
}

TEST(UidMismatchTest, EqualNumbersOrNoCheckSayNothing) {
  EXPECT_EQ(uid_mismatch("alice", 1001, 1001, scans({{1001, 1001}, {1001, 1001}})), "");
  EXPECT_EQ(uid_mismatch("alice", -1, -1, scans({{1002, 1002}})), "");
  // an older scan without a gid is compared by uid alone
  EXPECT_EQ(uid_mismatch("alice", 1001, 1001, scans({{1001, -1}})), "");
}

}  // namespace
}  // namespace tpurun

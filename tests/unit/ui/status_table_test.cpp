#include "tpurun/ui/status_table.hpp"

#include <gtest/gtest.h>

#include "../tpu/scan_fixtures.hpp"
#include "fake_transport.hpp"
#include "fakes/text.hpp"
#include "tpurun/ui/tpu_view.hpp"

namespace tpurun {
namespace {

using tpurun::testing::empty_scan;
using tpurun::testing::holder;
using tpurun::testing::kBobHoldsEverything;
using tpurun::testing::make_workers;
using tpurun::testing::proc;
using tpurun::testing::squeeze;

WorkerScanResult result(const Worker& w, const LockScan& scan) { return {w, state_from_scan(scan), scan, ""}; }

// A 64-worker pod: bob on 2-3, alice on 4, a stale lock on 6, carol-style
// partial view on 5, one unreachable, the rest free.
std::vector<WorkerScanResult> pod() {
  auto workers = make_workers(64);
  std::vector<WorkerScanResult> results;
  for (const Worker& w : workers) {
    LockScan s = empty_scan();
    if (w.index == 2 || w.index == 3) {
      s = *parse_scan(kBobHoldsEverything);
      for (ScannedProcess& p : s.holders) {  // different pids per worker
        p.pid += 1000 * w.index;
        p.pgid += 1000 * w.index;
      }
    } else if (w.index == 4) {
      s.holders = {holder(proc(77, 1001, 77, 1, "python3 mine.py", "run-7"))};
    } else if (w.index == 6) {
      s.lockfile = {true, FileOwner{1002, "bob"}, 3, false, std::nullopt};
    } else if (w.index == 5) {
      s.privileged = false;
    } else if (w.index == 0 || w.index == 1) {
      s.tpu_logs = FileOwner{1002, "bob"};
    }
    results.push_back(result(w, s));
  }
  results[9] = {workers[9], TpuState::unreachable, std::nullopt, "connect timed out after 5s"};
  return results;
}

TEST(StatusTableTest, GroupsIdenticalRowsAndNamesEveryOtherUsersJob) {
  std::string raw = format_status_table("sim", pod(), false);
  std::string table = squeeze(raw);

  EXPECT_NE(table.find("sim: 64 workers: 58 free, 1 busy-self, 2 busy-other, 1 stale-lock, 1 partial, "
                       "1 unreachable\n"),
            std::string::npos)
      << raw;
  EXPECT_NE(table.find(" w[0-1,7-8,10-63] free\n"), std::string::npos) << raw;
  EXPECT_NE(
      table.find(" w[2-3] busy-other bob: python3 train.py --forever --children 2 [run 20250101-run-b]\n"),
      std::string::npos)
      << raw;
  EXPECT_NE(table.find(" w4 busy-self yours: python3 mine.py [run run-7]\n"), std::string::npos) << raw;
  EXPECT_NE(table.find(" w6 stale-lock /tmp/libtpu_lockfile left by bob; no process holds the TPU\n"),
            std::string::npos)
      << raw;
  EXPECT_NE(table.find(" w5 partial no passwordless sudo"), std::string::npos) << raw;
  EXPECT_NE(table.find(" w9 unreachable connect timed out after 5s\n"), std::string::npos) << raw;
  // Whom to contact: user, pid, age, command, per worker.
  EXPECT_NE(table.find(" w2 bob 2406 2h13m python3 train.py --forever --children 2 (+2 in its group)\n"),
            std::string::npos)
      << raw;
  EXPECT_NE(table.find(" w3 bob 3406 2h13m"), std::string::npos) << raw;
  // Fixes for the harmless and the stale.
  EXPECT_NE(table.find("w[0-1]: /tmp/tpu_logs belongs to bob"), std::string::npos) << raw;
  EXPECT_NE(table.find("tpurun kill --worker 0-1"), std::string::npos) << raw;
  EXPECT_NE(table.find("tpurun kill --worker 6"), std::string::npos) << raw;
  EXPECT_EQ(raw.find("\033["), std::string::npos);  // no color when not a terminal
}

TEST(StatusTableTest, ColorOnlyOnATerminal) {
  std::string table = format_status_table("sim", pod(), true);
  EXPECT_NE(table.find("\033[1;31mbusy-other\033[0m"), std::string::npos);
}

TEST(StatusJsonTest, DocumentedFields) {
  auto results = pod();
  nlohmann::json w2 = scan_result_to_json(results[2]);
  EXPECT_EQ(w2["worker"], 2);
  EXPECT_EQ(w2["host"], "10.0.0.3");
  EXPECT_EQ(w2["state"], "busy-other");
  ASSERT_EQ(w2["holders"].size(), 3u);
  EXPECT_EQ(w2["holders"][0]["user"], "bob");
  EXPECT_EQ(w2["holders"][0]["uid"], 1002);
  EXPECT_EQ(w2["holders"][0]["device"], "/dev/accel0");
  EXPECT_EQ(w2["holders"][0]["elapsed_s"], 7980);
  EXPECT_EQ(w2["holders"][0]["pgid"], 2406);
  EXPECT_EQ(w2["holders"][0]["run_id"], "20250101-run-b");
  EXPECT_EQ(w2["lockfile"]["exists"], true);
  EXPECT_EQ(w2["lockfile"]["owner"], "bob");
  EXPECT_EQ(w2["lockfile"]["held"], true);
  EXPECT_EQ(w2["tpu_logs_owner"], "bob");
  EXPECT_TRUE(w2["error"].is_null());
  nlohmann::json w9 = scan_result_to_json(results[9]);
  EXPECT_EQ(w9["state"], "unreachable");
  EXPECT_EQ(w9["error"], "connect timed out after 5s");
  EXPECT_TRUE(w9["lockfile"].is_null());
}

}  // namespace
}  // namespace tpurun

#include <gtest/gtest.h>

#include "../tpu/scan_fixtures.hpp"
#include "cli/kill.hpp"
#include "cli/status.hpp"
#include "cli/tpu_view.hpp"
#include "fake_transport.hpp"
#include "tpurun/worker_select.hpp"

namespace tpurun::cli {
namespace {

using tpurun::testing::empty_scan;
using tpurun::testing::holder;
using tpurun::testing::kBobHoldsEverything;
using tpurun::testing::make_workers;
using tpurun::testing::proc;

WorkerScanResult result(const Worker& w, const LockScan& scan) { return {w, decide(scan), scan, ""}; }

// Column padding depends on the widest cell; compare with runs of spaces squeezed.
std::string squeeze(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out.push_back(c);
  }
  return out;
}

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

TEST(TpuExitCodeTest, FreeBusyUnreachable) {
  EXPECT_EQ(tpu_exit_code({TpuState::free, TpuState::free}), 0);
  EXPECT_EQ(tpu_exit_code({TpuState::free, TpuState::partial}), 1);
  EXPECT_EQ(tpu_exit_code({TpuState::busy_self, TpuState::stale_lock}), 1);
  EXPECT_EQ(tpu_exit_code({TpuState::busy_other, TpuState::unreachable}), 255);
  EXPECT_EQ(tpu_exit_code({TpuState::error}), 255);
}

TEST(ShortCommandTest, AbsolutePathsLoseTheirDirectories) {
  EXPECT_EQ(short_command("/usr/bin/python3 /home/bob/proj/train.py --out=/tmp/x /"),
            "python3 train.py --out=/tmp/x /");
  EXPECT_EQ(short_command("python3  -m a.b"), "python3  -m a.b");
}

TEST(TruncateTextTest, CountsCharactersNotBytes) {
  EXPECT_EQ(truncate_text("short", 10), "short");
  EXPECT_EQ(truncate_text("python3 train.py --very-long", 12), "python3 t...");
  EXPECT_EQ(truncate_text("日本語日本語日本語", 6), "日本語...");
}

TEST(KillReportTest, DryRunListsVictimsRemovalsAndWhoIsSpared) {
  WorkerKill r;
  r.worker = {0, "10.0.0.1", 22};
  LockScan s = empty_scan();
  s.holders = {holder(proc(100, 1001, 100, 1)), holder(proc(300, 1002, 300, 1, "python3 bob.py"))};
  s.processes = s.holders;
  r.before = s;
  r.plan = plan_kill(s, {});
  r.state = TpuState::busy_other;
  KillRequest request;
  request.dry_run = true;
  request.grace_ms = 2000;

  std::string raw = format_kill_report({r}, request, false);
  std::string text = squeeze(raw);

  EXPECT_NE(text.find("dry run: nothing is signalled or removed."), std::string::npos) << text;
  EXPECT_NE(text.find("[w0 10.0.0.1] would send SIGTERM, then SIGKILL after 2s, to 1 process (groups 100):"),
            std::string::npos)
      << raw;
  EXPECT_NE(text.find("[w0 10.0.0.1] alice 100 1m python3 train.py (holds /dev/accel0)\n"), std::string::npos)
      << raw;
  EXPECT_NE(text.find("not yours, not signalled: bob 300 1m python3 bob.py\n"), std::string::npos) << raw;
  EXPECT_NE(text.find(" w0 busy-other bob: python3 bob.py\n"), std::string::npos) << raw;
  EXPECT_EQ(kill_exit_code({r}, true), 0);
  EXPECT_EQ(kill_exit_code({r}, false), 1);
}

TEST(ParseGraceTest, Units) {
  EXPECT_EQ(parse_grace("10s"), 10000);
  EXPECT_EQ(parse_grace("2.5s"), 2500);
  EXPECT_EQ(parse_grace("500ms"), 500);
  EXPECT_EQ(parse_grace("1m"), 60000);
  EXPECT_EQ(parse_grace("3"), 3000);
  EXPECT_THROW(parse_grace("soon"), UsageError);
  EXPECT_THROW(parse_grace("-1s"), UsageError);
  EXPECT_THROW(parse_grace("2d"), UsageError);
}

}  // namespace
}  // namespace tpurun::cli

#include "tpurun/ui/kill_report.hpp"

#include <gtest/gtest.h>

#include "../tpu/scan_fixtures.hpp"
#include "fakes/text.hpp"

namespace tpurun {
namespace {

using tpurun::testing::empty_scan;
using tpurun::testing::holder;
using tpurun::testing::proc;
using tpurun::testing::squeeze;

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

}  // namespace
}  // namespace tpurun

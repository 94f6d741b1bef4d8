// The watcher's probes: a job whose pid is gone is reported with the exit
// record the worker itself sees, so a cached "no such file" on this host
// (NFS) never makes a finished job lost.
#include "runs/watcher/liveness.hpp"

#include <gmock/gmock.h>

#include <thread>

#include "fake_transport.hpp"
#include "tpu/scripted_transport.hpp"

namespace tpurun {
namespace {

using ::testing::HasSubstr;

TEST(LivenessProberTest, AGoneJobComesWithItsExitRecordAsTheWorkerSeesIt) {
  // Given worker 0's job finished (exit 0), worker 1's vanished, worker 2's runs
  testing::ScriptedTransport transport([](int worker, const RemoteCommand&) {
    const char* replies[] = {"exited 0\n", "dead\n", "alive\n"};
    return testing::ScriptedReply{replies[worker], "", 0};
  });
  LivenessProber prober(transport, testing::make_workers(3), 3, std::chrono::milliseconds(20));
  prober.set_jobs({{0, {100, "/nfs/logs/r/worker0.exit"}}, {1, {101, "/nfs/logs/r/worker1.exit"}}, {2, {102, ""}}});
  std::map<int, ProbeResult> seen;
  for (int i = 0; i < 500 && seen.size() < 3; ++i) {
    for (auto& [w, r] : prober.take()) seen[w] = r;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(seen.size(), 3u);
  // Then the finished one is dead with its code, the vanished one dead without, the other alive
  EXPECT_EQ(seen[0].probe, Probe::dead);
  EXPECT_EQ(seen[0].exit_code, 0);
  EXPECT_EQ(seen[1].probe, Probe::dead);
  EXPECT_FALSE(seen[1].exit_code);
  EXPECT_EQ(seen[2].probe, Probe::alive);
  // and the worker was asked about the exit record's path, quoted
  auto ran = transport.commands_ran();
  ASSERT_FALSE(ran.empty());
  bool asked = false;
  for (const auto& r : ran) asked |= r.worker == 0 && r.command.command_line.find("'/nfs/logs/r/worker0.exit'") != std::string::npos;
  EXPECT_TRUE(asked);
}

}  // namespace
}  // namespace tpurun

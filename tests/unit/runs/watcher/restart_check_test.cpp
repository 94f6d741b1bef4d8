// What a relaunch waits for: the TPU VM READY (gcloud pods) and every worker reachable.
#include <gtest/gtest.h>
#include "runs/watcher/restart_check.hpp"

#include "fakes/system_fakes.hpp"
#include "tpu/scripted_transport.hpp"
#include "tpurun/pod/config.hpp"
#include "tpurun/runs/watcher/watcher.hpp"

namespace tpurun {
namespace {

// A worker that answers the scan as root: nobody holds its TPU.
testing::ScriptedReply free_worker(int, const RemoteCommand&) {
  return {"TPURUN-SCAN 1\ncaller 1001 alice\npriv root\nself 10\nlock 0\nlogs 0\nbegin pinfo\nend pinfo\n"
          "begin runid\nend runid\ndenied 0\nend\n", "", 0};
}

RunRecord two_workers() {
  RunRecord r;
  r.workers = {{0, "10.0.0.2", 22}, {1, "10.0.0.3", 22}};
  return r;
}

TEST(RestartCheck, APreemptedTpuVmEndsTheWaitWithItsStateAndHealth) {
  // Given a gcloud pod whose describe says PREEMPTED
  PodConfig pod;
  pod.name = "v4";
  pod.gcloud = GcloudSpec{"v4-32", "us-central2-b", "", true};
  testing::FakeProcessRunner gcloud;
  gcloud.next = {0, R"({"state": "PREEMPTED", "health": "UNHEALTHY_MAINTENANCE"})", ""};
  testing::ScriptedTransport transport([](int, const RemoteCommand&) { return testing::ScriptedReply{}; });
  // Then it is gone for good (never waited for), and no worker is even asked
  RestartCheck check = check_restart(two_workers(), pod, transport, gcloud, 8, CancelToken());
  EXPECT_EQ(check.gone, "TPU VM v4-32 is PREEMPTED (health UNHEALTHY_MAINTENANCE)");
  EXPECT_EQ(check.gone_state, "PREEMPTED");
  EXPECT_FALSE(check.ready());
  EXPECT_TRUE(transport.commands_ran().empty());
  ASSERT_EQ(gcloud.calls.size(), 1u);
  EXPECT_EQ(gcloud.calls[0].argv, gcloud_describe_argv(*pod.gcloud));
  // and so is a deleted one
  gcloud.next = {1, "", "ERROR: (gcloud.compute.tpus.tpu-vm.describe) NOT_FOUND: Resource 'x' was not found"};
  check = check_restart(two_workers(), pod, transport, gcloud, 8, CancelToken());
  EXPECT_EQ(check.gone, "TPU VM v4-32 was not found (deleted)");
  EXPECT_EQ(check.gone_state, "NOT_FOUND");
}

TEST(RestartCheck, AStoppedTpuVmIsWaitedFor) {
  PodConfig pod;
  pod.gcloud = GcloudSpec{"v4-32", "z", "", true};
  testing::FakeProcessRunner gcloud;
  gcloud.next = {0, R"({"state": "STARTING"})", ""};
  testing::ScriptedTransport transport([](int, const RemoteCommand&) { return testing::ScriptedReply{}; });
  RestartCheck check = check_restart(two_workers(), pod, transport, gcloud, 8, CancelToken());
  EXPECT_EQ(check.waiting_for, "TPU VM v4-32 is STARTING");
  EXPECT_TRUE(check.gone.empty());
}

TEST(RestartCheck, ARelaunchGoesToTheTpuVmsCurrentAddresses) {
  // Given a TPU VM that came back READY with new addresses after a stop and start
  PodConfig pod;
  pod.gcloud = GcloudSpec{"v4-32", "z", "", true};
  testing::FakeProcessRunner gcloud;
  gcloud.next = {0, R"({"state": "READY", "id": "7", "networkEndpoints": [{"ipAddress": "10.0.0.8"},
                                                                       {"ipAddress": "10.0.0.9"}]})", ""};
  testing::ScriptedTransport transport(free_worker);
  RestartCheck check = check_restart(two_workers(), pod, transport, gcloud, 8, CancelToken());
  // Then the run's workers move there, and the scan asks them, not the old ones
  ASSERT_EQ(check.workers.size(), 2u);
  EXPECT_EQ(check.workers[0].host, "10.0.0.8");
  EXPECT_EQ(check.workers[1].host, "10.0.0.9");
  EXPECT_EQ(check.workers[1].host_key_alias, "tpu.7-1");
  EXPECT_TRUE(check.ready()) << check.waiting_for << check.gone;
}

TEST(RestartCheck, AnUnreachableWorkerIsWaitedFor) {
  PodConfig pod;  // not a gcloud pod: no describe
  testing::FakeProcessRunner gcloud;
  testing::ScriptedTransport transport([](int, const RemoteCommand&) { return testing::ScriptedReply{}; });
  transport.unreachable = {1};
  const std::string why = check_restart(two_workers(), pod, transport, gcloud, 8, CancelToken()).waiting_for;
  EXPECT_EQ(why.rfind("waiting for ", 0), 0u) << why;
  EXPECT_NE(why.find("w1 10.0.0.3 (connection refused"), std::string::npos) << why;
  EXPECT_TRUE(gcloud.calls.empty());
}

TEST(RestartCheck, EverySliceOfAMultiSlicePodMustBeReady) {
  // Given a multi-slice pod of two gcloud slices; the fake says STOPPED to every describe
  PodConfig pod;
  pod.slices = {Slice{"a", GcloudSpec{"tpu-a", "z", "", true}, 0, 1},
                Slice{"b", GcloudSpec{"tpu-b", "z", "", true}, 1, 1}};
  RunRecord run = two_workers();
  run.workers[0].slice = 0;
  run.workers[1].slice = 1;
  testing::FakeProcessRunner gcloud;
  gcloud.next = {0, R"({"state": "STOPPED"})", ""};
  testing::ScriptedTransport transport(free_worker);
  // Then the first slice's TPU VM is waited for
  EXPECT_EQ(check_restart(run, pod, transport, gcloud, 8, CancelToken()).waiting_for, "TPU VM tpu-a is STOPPED");
  // and once the VMs are READY, the second slice's is asked too
  gcloud.next = {0, R"({"state": "READY", "networkEndpoints": [{"ipAddress": "10.0.0.2"}]})", ""};
  RestartCheck check = check_restart(run, pod, transport, gcloud, 8, CancelToken());
  EXPECT_TRUE(check.ready()) << check.waiting_for << check.gone;
  ASSERT_EQ(gcloud.calls.size(), 3u);
  EXPECT_EQ(gcloud.calls[2].argv, gcloud_describe_argv(*pod.slices[1].gcloud));
  // each slice's worker 0 is that slice's first endpoint
  EXPECT_EQ(check.workers[1].host, "10.0.0.2");
}

}  // namespace
}  // namespace tpurun

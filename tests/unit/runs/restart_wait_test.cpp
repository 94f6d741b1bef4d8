// What a relaunch waits for: the TPU VM READY (gcloud pods) and every worker reachable.
#include <gtest/gtest.h>

#include "fakes/system_fakes.hpp"
#include "tpu/scripted_transport.hpp"
#include "tpurun/config.hpp"
#include "tpurun/supervisor.hpp"

namespace tpurun {
namespace {

RunRecord two_workers() {
  RunRecord r;
  r.workers = {{0, "10.0.0.2", 22}, {1, "10.0.0.3", 22}};
  return r;
}

TEST(RestartBlockers, APreemptedTpuVmIsWaitedForWithItsStateAndHealth) {
  // Given a gcloud pod whose describe says PREEMPTED
  PodConfig pod;
  pod.gcloud = GcloudSpec{"v4-32", "us-central2-b", "", true};
  testing::FakeProcessRunner gcloud;
  gcloud.next = {0, R"({"state": "PREEMPTED", "health": "UNHEALTHY_MAINTENANCE"})", ""};
  testing::ScriptedTransport transport([](int, const RemoteCommand&) { return testing::ScriptedReply{}; });
  // Then the wait names both, and no worker is even asked
  EXPECT_EQ(restart_blockers(two_workers(), pod, transport, gcloud, 8, CancelToken()),
            "TPU VM v4-32 is PREEMPTED (health UNHEALTHY_MAINTENANCE)");
  EXPECT_TRUE(transport.commands_ran().empty());
  ASSERT_EQ(gcloud.calls.size(), 1u);
  EXPECT_EQ(gcloud.calls[0].argv, gcloud_describe_argv(*pod.gcloud));
}

TEST(RestartBlockers, AnUnreachableWorkerIsWaitedFor) {
  PodConfig pod;  // not a gcloud pod: no describe
  testing::FakeProcessRunner gcloud;
  testing::ScriptedTransport transport([](int, const RemoteCommand&) { return testing::ScriptedReply{}; });
  transport.unreachable = {1};
  const std::string why = restart_blockers(two_workers(), pod, transport, gcloud, 8, CancelToken());
  EXPECT_EQ(why.rfind("waiting for ", 0), 0u) << why;
  EXPECT_NE(why.find("w1 10.0.0.3 (connection refused"), std::string::npos) << why;
  EXPECT_TRUE(gcloud.calls.empty());
}

TEST(RestartBlockers, EverySliceOfAMultiSlicePodMustBeReady) {
  // Given a multi-slice pod of two gcloud slices; the fake says PREEMPTED to every describe
  PodConfig pod;
  pod.slices = {Slice{"a", GcloudSpec{"tpu-a", "z", "", true}, 0, 1},
                Slice{"b", GcloudSpec{"tpu-b", "z", "", true}, 1, 1}};
  testing::FakeProcessRunner gcloud;
  gcloud.next = {0, R"({"state": "PREEMPTED"})", ""};
  testing::ScriptedTransport transport([](int, const RemoteCommand&) { return testing::ScriptedReply{}; });
  // Then the first slice's TPU VM is waited for
  EXPECT_EQ(restart_blockers(two_workers(), pod, transport, gcloud, 8, CancelToken()), "TPU VM tpu-a is PREEMPTED");
  // and once the VMs are READY, the second slice's is asked too
  gcloud.next = {0, R"({"state": "READY"})", ""};
  EXPECT_EQ(restart_blockers(two_workers(), pod, transport, gcloud, 8, CancelToken()).find("tpu-b"),
            std::string::npos);
  ASSERT_EQ(gcloud.calls.size(), 3u);
  EXPECT_EQ(gcloud.calls[2].argv, gcloud_describe_argv(*pod.slices[1].gcloud));
}

}  // namespace
}  // namespace tpurun

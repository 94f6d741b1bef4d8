// stage on a multi-slice pod: what the jobs are told, and the flags refused
// there (a part of the pod, MEGASCALE_* in --env, --megascale-port elsewhere).
#include "tpurun/runs/stage/multislice_plan.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tpurun/pod/worker_select.hpp"

namespace tpurun {
namespace {

using ::testing::HasSubstr;
using Env = std::map<std::string, std::string>;

// Slices a (w0-1) and b (w2-3), joined as "a,b".
Target two_slices() {
  Target t;
  t.pod.name = "a,b";
  t.pod.slices = {Slice{"a", {}, 0, 0}, Slice{"b", {}, 0, 0}};
  join_slice_workers(t.pod, {{Worker{0, "10.0.0.1", 22}, Worker{1, "10.0.0.2", 22}},
                             {Worker{0, "10.0.1.1", 22}, Worker{1, "10.0.1.2", 22}}});
  t.workers = t.pod.workers;
  return t;
}

std::string error_of(const Target& target, int port, const Env& env) {
  try {
    plan_multislice(target, port, env);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(StageSlicesTest, TheCoordinatorIsSliceZerosWorkerZero) {
  auto ms = plan_multislice(two_slices(), 0, {});
  ASSERT_TRUE(ms);
  EXPECT_EQ(ms->num_slices, 2);
  EXPECT_EQ(ms->coordinator, "10.0.0.1");
  EXPECT_EQ(ms->port, kDefaultMegascalePort);
  EXPECT_EQ(multislice_text(two_slices().pod, *ms),
            "2 slices (a: w0-1, b: w2-3), MEGASCALE_COORDINATOR_ADDRESS=10.0.0.1:8080");
}

TEST(StageSlicesTest, TheFlagPortWinsOverThePods) {
  Target t = two_slices();
  t.pod.megascale_port = 8476;
  EXPECT_EQ(plan_multislice(t, 0, {})->port, 8476);
  EXPECT_EQ(plan_multislice(t, 9000, {})->port, 9000);
}

TEST(StageSlicesTest, AnOrdinaryPodGetsNothingAndRefusesThePort) {
  Target t;
  t.pod.name = "sim";
  t.pod.workers = {Worker{0, "10.0.0.1", 22}};
  t.workers = t.pod.workers;
  EXPECT_FALSE(plan_multislice(t, 0, {{"MEGASCALE_PORT", "1"}}));  // the user's own, passed as is
  EXPECT_THAT(error_of(t, 9000, {}), HasSubstr("--megascale-port: pod 'sim' is a single slice"));
}

TEST(StageSlicesTest, APartOfTheSlicesIsRefused) {
  Target t = two_slices();
  t.workers.pop_back();
  EXPECT_THAT(error_of(t, 0, {}), HasSubstr("a multi-slice run needs every worker of every slice (4 in all)"));
}

TEST(StageSlicesTest, EnvMayNotSetWhatTpurunSets) {
  EXPECT_THAT(error_of(two_slices(), 0, {{"MEGASCALE_SLICE_ID", "3"}}),
              HasSubstr("--env MEGASCALE_SLICE_ID: tpurun sets MEGASCALE_COORDINATOR_ADDRESS"));
  // other megascale flags are the user's
  EXPECT_TRUE(plan_multislice(two_slices(), 0, {{"MEGASCALE_GRPC_ENABLE_XOR_TRACER", "true"}}));
}

}  // namespace
}  // namespace tpurun

// down's rules: pure, one at a time.
#include "tpurun/cloud/down.hpp"

#include <gtest/gtest.h>

namespace tpurun {
namespace {

DownFacts alices_vm() {
  DownFacts f;
  f.node.state = "READY";
  f.qr.state = "ACTIVE";
  f.qr.name = "tpu";
  f.made_by = "alice";
  return f;
}

TEST(DownRulesTest, AlicesOwnVmGoesThroughItsQueuedResource) {
  const DownFacts f = alices_vm();
  EXPECT_EQ(down_refusal(f, "alice", false), std::nullopt);
  const auto commands = down_commands(f, GcloudSpec{"tpu", "z", "p", true});
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0][3], "queued-resources");
  EXPECT_EQ(commands[0][commands[0].size() - 2], "--force");
}

TEST(DownRulesTest, RefusesOthersClaimsTpuUsersAndVms) {
  DownFacts f = alices_vm();
  EXPECT_NE(down_refusal(f, "bob", false)->find("tpurun made it for alice, not for you"), std::string::npos);
  f.made_by = "";
  EXPECT_NE(down_refusal(f, "alice", false)->find("tpurun did not make this TPU VM"), std::string::npos);
  EXPECT_EQ(down_refusal(f, "alice", true), std::nullopt);  // --force
  f = alices_vm();
  f.claimed_by = "bob until 12:00";
  EXPECT_EQ(*down_refusal(f, "alice", false), "the pod is claimed by bob until 12:00");
  f = alices_vm();
  f.foreign_tpu_users = {"w1 (bob pid 42)"};
  EXPECT_NE(down_refusal(f, "alice", false)->find("w1 (bob pid 42)"), std::string::npos);
  f.describe_error = "no answer";
  EXPECT_TRUE(down_refusal(f, "alice", true).has_value());  // not even --force on an unknown state
}

TEST(DownRulesTest, APlainVmGoesByItself) {
  DownFacts f = alices_vm();
  f.qr.state = "NOT_FOUND";
  const auto commands = down_commands(f, GcloudSpec{"tpu", "z", "", true});
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0][3], "tpu-vm");
  f.node.state = "NOT_FOUND";
  EXPECT_TRUE(nothing_left(f));
  EXPECT_TRUE(down_commands(f, GcloudSpec{"tpu", "z", "", true}).empty());
}

TEST(DownRulesTest, WhatIsThereNamesTheVmItsQueuedResourceAndWhoMadeThem) {
  const GcloudSpec spec{"tpu", "us-central2-b", "p", true};
  EXPECT_EQ(down_facts_text(alices_vm(), spec),
            "TPU VM tpu in us-central2-b: READY; queued resource tpu: ACTIVE (made by tpurun for alice)");
  DownFacts f;
  f.node.state = "NOT_FOUND";
  f.qr.state = "WAITING_FOR_RESOURCES";
  f.qr.name = "tpu-qr";
  EXPECT_EQ(down_facts_text(f, spec), "TPU VM tpu in us-central2-b: no VM; queued resource tpu-qr: WAITING_FOR_RESOURCES");
}

}  // namespace
}  // namespace tpurun

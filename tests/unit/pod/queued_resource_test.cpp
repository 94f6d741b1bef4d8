// Queued resources: describe's answer read, and gcloud's commands built.
#include "tpurun/pod/queued_resource.hpp"

#include <gtest/gtest.h>

#include "tpurun/transport/shell_quote.hpp"

namespace tpurun {
namespace {

TEST(QueuedResourceTest, ReadsStateErrorNodesAndLabels) {
  const QueuedResource qr = parse_queued_resource(R"({
    "name": "projects/p/locations/us-central2-b/queuedResources/q1",
    "createTime": "2026-01-02T03:04:05Z",
    "tpu": {"nodeSpec": [{"parent": "projects/p/locations/us-central2-b", "nodeId": "n1",
                          "node": {"labels": {"tpurun-user": "alice"}}}]},
    "state": {"state": "FAILED", "stateInitiator": "SERVICE",
              "failedData": {"error": {"code": 8, "message": "There is no more capacity"}}}})");
  EXPECT_EQ(qr.name, "q1");
  EXPECT_EQ(qr.state, "FAILED");
  EXPECT_EQ(qr.error, "There is no more capacity");
  EXPECT_EQ(qr.error_code, 8);
  EXPECT_EQ(qr.node_ids, std::vector<std::string>{"n1"});
  EXPECT_EQ(qr.labels.at("tpurun-user"), "alice");
  EXPECT_FALSE(qr.multislice);
  EXPECT_FALSE(qr.pending());
  EXPECT_TRUE(parse_queued_resource(R"({"state": {"state": "WAITING_FOR_RESOURCES"}})").pending());
  EXPECT_TRUE(parse_queued_resource(R"({"tpu": {"nodeSpec": [{"multisliceParams": {"nodeCount": 2}}]}})").multislice);
  EXPECT_THROW(parse_queued_resource("[]"), std::runtime_error);
}

TEST(QueuedResourceTest, CreateFromAPodsCreateBlock) {
  // given: a spot v4-16 with a label and a data disk
  CreateSpec create;
  create.accelerator_type = "v4-16";
  create.runtime_version = "tpu-ubuntu2204-base";
  create.spot = true;
  create.labels = {{"team", "kmh"}};
  create.data_disks = {{"projects/p/zones/z/disks/d", "read-only"}};
  const GcloudSpec spec{"n1", "us-central2-b", "p", true};
  // when
  const auto argv = gcloud_qr_create_argv(spec, shape_of_create(spec, create, {{"tpurun-user", "alice"}}),
                                          queued_options_of(create), "/m");
  // then: the queued resource is named after its node; tpurun's label beside the user's
  EXPECT_EQ(shell_display(argv),
            "gcloud compute tpus queued-resources create n1 --node-id n1 --zone us-central2-b --project p "
            "--accelerator-type v4-16 --runtime-version tpu-ubuntu2204-base --spot "
            "--labels=team=kmh,tpurun-user=alice --data-disk source=projects/p/zones/z/disks/d,mode=read-only --quiet");
}

TEST(QueuedResourceTest, TiersAndDelete) {
  CreateSpec create;
  create.accelerator_type = "v5litepod-8";
  create.runtime_version = "v2-alpha-tpuv5-lite";
  create.best_effort = true;
  const GcloudSpec spec{"n1", "z", "", true};
  const auto argv = gcloud_qr_create_argv(spec, shape_of_create(spec, create, {}), queued_options_of(create), "/m");
  EXPECT_EQ(argv[1], "alpha");
  EXPECT_EQ(argv[argv.size() - 2], "--best-effort");
  EXPECT_EQ(shell_display(gcloud_qr_delete_argv(spec, true)),
            "gcloud compute tpus queued-resources delete n1 --zone z --force --quiet");
  EXPECT_EQ(shell_display(gcloud_qr_describe_argv(spec)),
            "gcloud compute tpus queued-resources describe n1 --zone z --format=json");
}

}  // namespace
}  // namespace tpurun

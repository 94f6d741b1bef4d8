// Creating a TPU VM again from what describe recorded: which gcloud commands.
#include "tpurun/pod/tpu_recreate.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pod/gcloud_fixtures.hpp"
#include "tpurun/pod/queued_resource.hpp"

namespace tpurun {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// A spot v4-16 as the real API describes one, with the parts a create can set again.
constexpr const char* kSpotNode = R"({
  "acceleratorConfig": {"topology": "2x2x2", "type": "V4"},
  "acceleratorType": "v4-16",
  "apiVersion": "V2",
  "createTime": "2024-03-01T09:12:44.153846817Z",
  "dataDisks": [{"mode": "READ_ONLY", "sourceDisk": "projects/p/zones/us-central2-b/disks/data"}],
  "description": "nightly, v4",
  "id": "111",
  "labels": {"team": "kmh", "owner": "alice"},
  "metadata": {"ssh-keys": "alice:ssh-ed25519 AAAA alice\nbob:ssh-ed25519 BBBB bob", "startup-script": "echo a,b"},
  "name": "projects/p/locations/us-central2-b/nodes/rc",
  "networkConfig": {"enableExternalIps": false, "network": "projects/p/global/networks/tpu-net",
                    "subnetwork": "projects/p/regions/us-central2/subnetworks/tpu-sub"},
  "runtimeVersion": "tpu-ubuntu2204-base",
  "schedulingConfig": {"preemptible": true, "spot": true},
  "serviceAccount": {"email": "sa@p.iam.gserviceaccount.com", "scope": ["https://www.googleapis.com/auth/cloud-platform"]},
  "shieldedInstanceConfig": {"enableSecureBoot": true},
  "state": "PREEMPTED",
  "tags": ["tpu", "ssh"]
})";

GcloudSpec spec() { return GcloudSpec{"rc", "us-central2-b", "p", true}; }

TEST(TpuRecreate, ReadsEveryFieldACreateCanSetAgain) {
  const TpuVmShape shape = read_tpu_vm_shape(kSpotNode);
  EXPECT_EQ(shape.name, "rc");
  EXPECT_EQ(shape.id, "111");
  EXPECT_EQ(shape.accelerator_type, "v4-16");
  EXPECT_EQ(shape.runtime_version, "tpu-ubuntu2204-base");
  EXPECT_EQ(shape.network, "projects/p/global/networks/tpu-net");
  EXPECT_EQ(shape.subnetwork, "projects/p/regions/us-central2/subnetworks/tpu-sub");
  EXPECT_FALSE(shape.external_ips);
  EXPECT_TRUE(shape.spot);
  EXPECT_EQ(shape.labels.at("team"), "kmh");
  EXPECT_EQ(shape.metadata.at("startup-script"), "echo a,b");
  EXPECT_THAT(shape.tags, ElementsAre("tpu", "ssh"));
  EXPECT_TRUE(shape.secure_boot);
  EXPECT_EQ(why_not_recreatable(shape), std::nullopt);
}

TEST(TpuRecreate, CreateCommandCarriesTheRecordedShape) {
  const TpuVmShape shape = read_tpu_vm_shape(kSpotNode);
  const auto argv = gcloud_create_argv(spec(), shape, "/nfs/logs/alice/p/RUN/tpu-vm/metadata");
  EXPECT_THAT(argv, ElementsAre("gcloud", "compute", "tpus", "tpu-vm", "create", "rc", "--zone", "us-central2-b",
                                "--project", "p", "--accelerator-type", "v4-16", "--version", "tpu-ubuntu2204-base",
                                "--network", "projects/p/global/networks/tpu-net", "--subnetwork",
                                "projects/p/regions/us-central2/subnetworks/tpu-sub", "--spot", "--internal-ips",
                                "--labels=owner=alice,team=kmh",
                                "--metadata-from-file=ssh-keys=/nfs/logs/alice/p/RUN/tpu-vm/metadata/ssh-keys,"
                                "startup-script=/nfs/logs/alice/p/RUN/tpu-vm/metadata/startup-script",
                                "--tags=tpu,ssh", "--service-account", "sa@p.iam.gserviceaccount.com",
                                "--scopes=https://www.googleapis.com/auth/cloud-platform", "--description",
                                "nightly, v4", "--shielded-secure-boot", "--data-disk",
                                "source=projects/p/zones/us-central2-b/disks/data,mode=read-only", "--async",
                                "--quiet"));
  // --spot alone: a Spot VM's describe also says preemptible.
  EXPECT_THAT(argv, Not(Contains("--preemptible")));
}

TEST(TpuRecreate, MetadataValuesGoThroughFilesVerbatim) {
  const auto files = metadata_files(read_tpu_vm_shape(kSpotNode), "/d");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].first, "/d/ssh-keys");
  EXPECT_EQ(files[0].second, "alice:ssh-ed25519 AAAA alice\nbob:ssh-ed25519 BBBB bob");
  EXPECT_EQ(files[1].first, "/d/startup-script");
}

TEST(TpuRecreate, APathWithACommaUsesGcloudsOwnDelimiterEscape) {
  const auto argv = gcloud_create_argv(spec(), read_tpu_vm_shape(kSpotNode), "/nfs/a,b");
  EXPECT_THAT(argv, Contains("--metadata-from-file=^;^ssh-keys=/nfs/a,b/ssh-keys;startup-script=/nfs/a,b/startup-script"));
}

TEST(TpuRecreate, APreemptibleOnDemandDefaultVmGetsOnlyWhatItHad) {
  TpuVmShape shape = read_tpu_vm_shape(tpurun::testing::kDescribeV4_32);
  shape.preemptible = true;
  const auto argv = gcloud_create_argv(GcloudSpec{"kmh", "us-central2-b", "", true}, shape, "/d");
  EXPECT_THAT(argv, Contains("--preemptible"));
  EXPECT_THAT(argv, Not(Contains("--spot")));
  EXPECT_THAT(argv, Not(Contains("--internal-ips")));
  EXPECT_THAT(argv, Not(Contains("--project")));
}

TEST(TpuRecreate, DeleteNeverPrompts) {
  EXPECT_THAT(gcloud_delete_argv(spec()), ElementsAre("gcloud", "compute", "tpus", "tpu-vm", "delete", "rc", "--zone",
                                                      "us-central2-b", "--project", "p", "--quiet"));
}

TEST(TpuRecreate, AQueuedResourcesNodeComesBackThroughItButAMultisliceOneDoesNot) {
  // given: a node that the queued resource qr1 made
  std::string json = kSpotNode;
  json.insert(json.rfind('}'), R"(, "queuedResource": "projects/p/locations/us-central2-b/queuedResources/qr1")");
  const TpuVmShape shape = read_tpu_vm_shape(json);
  // then: recreatable, through qr1 (its own name, the node's id)
  EXPECT_FALSE(why_not_recreatable(shape));
  EXPECT_EQ(queued_resource_spec(spec(), shape).name, "qr1");
  const auto argv = gcloud_qr_create_argv(spec(), shape, queued_options_of(shape), "/m");
  ASSERT_GE(argv.size(), 8u);
  EXPECT_EQ(std::vector<std::string>(argv.begin(), argv.begin() + 8),
            (std::vector<std::string>{"gcloud", "compute", "tpus", "queued-resources", "create", "qr1", "--node-id", "rc"}));
  EXPECT_THAT(argv, Contains("--spot"));
  EXPECT_THAT(argv, Not(Contains("--version")));
  // a node of a multislice queued resource: refused
  std::string multi = json;
  multi.insert(multi.rfind('}'), R"(, "multisliceNode": true)");
  const auto why = why_not_recreatable(read_tpu_vm_shape(multi));
  ASSERT_TRUE(why);
  EXPECT_THAT(*why, HasSubstr("multislice queued resource projects/p/locations/us-central2-b/queuedResources/qr1"));
}

TEST(TpuRecreate, RefusesWhatIsNotADescribeOrAnUnsafeMetadataKey) {
  EXPECT_THROW(read_tpu_vm_shape("[]"), std::runtime_error);
  EXPECT_THROW(read_tpu_vm_shape(R"({"labels": "x"})"), std::runtime_error);
  EXPECT_THROW(read_tpu_vm_shape(R"({"metadata": {"../x": "y"}})"), std::runtime_error);
  EXPECT_TRUE(why_not_recreatable(read_tpu_vm_shape(R"({"runtimeVersion": "v"})")));
}

}  // namespace
}  // namespace tpurun

// tpurun init: the config it writes parses, and says where it came from.
#include "tpurun/pod/config_init.hpp"

#include <gmock/gmock.h>

#include "fakes/system_fakes.hpp"
#include "tpurun/pod/config.hpp"

namespace tpurun {
namespace {

using ::testing::HasSubstr;

TEST(ConfigInitTest, OnePodPerTpuVmTheFirstReadyOneByDefaultAndItParses) {
  InitChoices c;
  c.zone = "us-central2-b";
  c.project = "my-proj";
  c.shared = "/kmh-nfs-us-mount";
  c.other_mounts = {"/kmh-nfs-ssd-us-mount"};
  c.tpus = parse_tpu_list_nodes(R"([
    {"name": "projects/my-proj/locations/us-central2-b/nodes/old", "state": "PREEMPTED", "acceleratorType": "v4-8"},
    {"name": "projects/my-proj/locations/us-central2-b/nodes/kmh-v4-32", "state": "READY", "acceleratorType": "v4-32",
     "runtimeVersion": "tpu-ubuntu2204-base", "schedulingConfig": {"spot": true},
     "queuedResource": "projects/my-proj/locations/us-central2-b/queuedResources/kmh-v4-32",
     "networkEndpoints": [{"ipAddress": "10.0.0.2"}, {"ipAddress": "10.0.0.3"}]}])");
  const std::string text = init_config_text(c);
  EXPECT_THAT(text, HasSubstr("gcloud compute tpus tpu-vm list --zone us-central2-b --project my-proj"));
  EXPECT_THAT(text, HasSubstr("// v4-32, 2 workers, READY when listed"));
  EXPECT_THAT(text, HasSubstr("another NFS mount here: /kmh-nfs-ssd-us-mount"));
  testing::FakeEnvironment env(std::map<std::string, std::string>{{"HOME", "/home/alice"}, {"USER", "alice"}});
  ConfigFile config = parse_config(text, "tpurun.json", env);
  EXPECT_EQ(config.default_pod, "kmh-v4-32");
  ASSERT_EQ(config.pods.size(), 2u);
  const PodConfig& pod = config.pods.at("kmh-v4-32");
  EXPECT_EQ(pod.gcloud->name, "kmh-v4-32");
  EXPECT_EQ(pod.gcloud->project, "my-proj");
  EXPECT_EQ(pod.staging_root, "/kmh-nfs-us-mount/tpurun/staging");
  EXPECT_EQ(pod.logs_root, "/kmh-nfs-us-mount/tpurun/logs");
  // "create" from its describe (the old one says too little: no runtime version)
  ASSERT_TRUE(pod.create.has_value());
  EXPECT_EQ(pod.create->accelerator_type, "v4-32");
  EXPECT_EQ(pod.create->runtime_version, "tpu-ubuntu2204-base");
  EXPECT_TRUE(pod.create->spot);
  EXPECT_TRUE(pod.create->queued);
  EXPECT_EQ(pod.create->zones, std::vector<std::string>{"us-central2-b"});
  EXPECT_FALSE(config.pods.at("old").create.has_value());
}

TEST(ConfigInitTest, FindmntTargetsInOrderNestedToo) {
  EXPECT_EQ(parse_findmnt_targets(R"({"filesystems": [{"target": "/a", "children": [{"target": "/a/b"}]},
                                                       {"target": "/c"}]})"),
            (std::vector<std::string>{"/a", "/a/b", "/c"}));
  EXPECT_TRUE(parse_findmnt_targets("").empty());
}

}  // namespace
}  // namespace tpurun

// A pod's "create" block: where each key lands, the defaults, and errors at file:line.
#include <gtest/gtest.h>

#include "pod/config_schema_fixture.hpp"

namespace tpurun {
namespace {

using tpurun::testing::ConfigSchemaTest;

std::string pod_with_create(const std::string& create) {
  return "{\n"
         "  \"pods\": {\n"
         "    \"v4\": {\n"
         "      \"gcloud\": {\"name\": \"tpu\", \"zone\": \"us-central2-b\"},\n"
         "      \"staging_root\": \"/srv/staging\", \"logs_root\": \"/srv/logs\",\n"
         "      \"create\": " + create + "\n"
         "    }\n"
         "  }\n"
         "}\n";
}

TEST_F(ConfigSchemaTest, CreateDefaultsToQueuedInTheGcloudZone) {
  const ConfigFile config = parse(pod_with_create(R"({"accelerator_type": "v4-16", "runtime_version": "base"})"));
  const CreateSpec& c = *config.pods.at("v4").create;
  EXPECT_EQ(c.accelerator_type, "v4-16");
  EXPECT_EQ(c.runtime_version, "base");
  EXPECT_TRUE(c.queued);
  EXPECT_FALSE(c.spot);
  EXPECT_EQ(c.zones, std::vector<std::string>{"us-central2-b"});
  EXPECT_EQ(c.max_queued.count(), 0);
}

TEST_F(ConfigSchemaTest, CreateKeysLand) {
  const ConfigFile config = parse(pod_with_create(
      R"({"accelerator_type": "v4-16", "runtime_version": "base", "spot": true, "queued": true,
          "zones": ["a", "b"], "max_queued": "30m", "labels": {"team": "kmh"}, "metadata": {"k": "v"},
          "network": "n", "subnetwork": "s", "service_account": "sa@p", "internal_ips": true,
          "data_disks": [{"source": "d1"}, {"source": "d2", "mode": "read-only"}]})"));
  const CreateSpec& c = *config.pods.at("v4").create;
  EXPECT_EQ(c.zones, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c.max_queued.count(), 1800);
  EXPECT_EQ(c.labels.at("team"), "kmh");
  EXPECT_EQ(c.metadata.at("k"), "v");
  EXPECT_TRUE(c.internal_ips);
  ASSERT_EQ(c.data_disks.size(), 2u);
  EXPECT_EQ(c.data_disks[0].second, "read-write");
  EXPECT_EQ(c.data_disks[1].second, "read-only");
}

TEST_F(ConfigSchemaTest, CreateErrorsSayWhere) {
  EXPECT_EQ(error(pod_with_create(R"({"runtime_version": "base"})")),
            "tpurun.json:6: pods.v4.create: missing required key \"accelerator_type\"");
  EXPECT_EQ(error(pod_with_create(R"({"accelerator_type": "v4-16", "runtime_version": "b", "spot": true, "reserved": true})")),
            "tpurun.json:6: pods.v4.create.reserved: \"spot\" and \"reserved\" are two tiers; a TPU VM has one (spot, "
            "reserved, guaranteed or best_effort, or none for on demand)");
  EXPECT_EQ(error(pod_with_create(R"({"accelerator_type": "v4-16", "runtime_version": "b", "zones": []})")),
            "tpurun.json:6: pods.v4.create.zones: list at least one zone, or leave \"zones\" out for gcloud.zone");
  EXPECT_EQ(error(pod_with_create(R"({"accelerator_type": "v4-16", "runtime_version": "b", "queued": false, "max_queued": "1h"})")),
            "tpurun.json:6: pods.v4.create.max_queued: bounds a queued resource's wait; it needs \"queued\": true");
  // Under a second would round to 0, "no limit" (issue 39, finding 17).
  EXPECT_EQ(error(pod_with_create(R"({"accelerator_type": "v4-16", "runtime_version": "b", "max_queued": "500ms"})")),
            "tpurun.json:6: pods.v4.create.max_queued: must be 0 (no limit) or at least 1s");
  EXPECT_EQ(error(pod_with_create(R"({"accelerator_type": "v4-16", "runtime_version": "b", "zone": "x"})")),
            "tpurun.json:6: pods.v4.create.zone: unknown key (did you mean 'zones'?)");
  EXPECT_EQ(error(pod_with("      \"create\": {},\n")),
            "tpurun.json:4: pods.sim.create: a pod made by `tpurun up` is a gcloud pod: it needs \"gcloud\": {\"name\", "
            "\"zone\"}");
}

}  // namespace
}  // namespace tpurun

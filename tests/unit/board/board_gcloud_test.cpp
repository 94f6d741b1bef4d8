// board.gcloud: the config block, and the TPU VMs `tpu-vm list` prints.
#include "board/board_gcloud.hpp"

#include <gtest/gtest.h>

#include "pod/config_schema_fixture.hpp"

namespace tpurun {
namespace {

using BoardGcloudConfigTest = tpurun::testing::ConfigSchemaTest;

std::string with_board(const std::string& board) {
  return "{ \"pods\": { \"a\": { \"workers\": [\"10.0.0.1\"], \"staging_root\": \"/s\", \"logs_root\": \"/l\" } },\n"
         "  \"board\": " + board + " }\n";
}

TEST_F(BoardGcloudConfigTest, ReadsProjectZonesAndSsh) {
  ConfigFile config = parse(with_board(
      R"({"gcloud": {"project": "p", "zones": ["z1", "z2"], "internal_ip": false, "ssh": {"user": "u"}}})"));
  ASSERT_TRUE(config.board_gcloud);
  EXPECT_EQ(config.board_gcloud->project, "p");
  EXPECT_EQ(config.board_gcloud->zones, (std::vector<std::string>{"z1", "z2"}));
  EXPECT_FALSE(config.board_gcloud->internal_ip);
  EXPECT_EQ(config.board_gcloud->ssh.user, "u");
  EXPECT_EQ(config.board_gcloud->ssh.identity_file, "/home/alice/.ssh/google_compute_engine");
  EXPECT_FALSE(parse(with_board("{}")).board_gcloud);
}

TEST_F(BoardGcloudConfigTest, MistakesAreReportedAtTheirLine) {
  EXPECT_EQ(error(with_board(R"({"gcloud": {"project": "p", "zones": []}})")),
            "tpurun.json:2: board.gcloud.zones: list at least one zone, e.g. [\"us-central2-b\"]");
  EXPECT_EQ(error(with_board(R"({"gcloud": {"project": "p", "zones": ["z", "z"]}})")),
            "tpurun.json:2: board.gcloud.zones[1]: listed twice");
  EXPECT_EQ(error(with_board(R"({"gcloud": {"zones": ["z"]}})")),
            "tpurun.json:2: board.gcloud: missing required key \"project\"");
  EXPECT_EQ(error(with_board(R"({"gcloud": {"project": "p", "zone": ["z"]}})")),
            "tpurun.json:2: board.gcloud.zone: unknown key (did you mean 'zones'?)");
}

TEST(ParseTpuListTest, ReadyTpusBecomePodsOthersKeepTheirState) {
  BoardGcloud board;
  board.project = "p";
  board.ssh.user = "u";
  auto tpus = parse_tpu_list(R"([
    {"name": "projects/p/locations/z/nodes/v4-a", "id": "9", "state": "READY", "acceleratorType": "v4-16",
     "networkEndpoints": [{"ipAddress": "10.0.0.1"}, {"ipAddress": "10.0.0.2"}]},
    {"name": "projects/p/locations/z/nodes/v4-b", "state": "PREEMPTED", "acceleratorType": "v4-8"},
    {"name": "projects/p/locations/z/nodes/v4-c", "state": "READY", "acceleratorType": "v4-8"}])",
                             "z", board);
  ASSERT_EQ(tpus.size(), 3u);
  EXPECT_EQ(tpus[0].name, "v4-a");
  EXPECT_EQ(tpus[0].accelerator, "v4-16");
  ASSERT_TRUE(tpus[0].pod);
  EXPECT_EQ(tpus[0].pod->workers.size(), 2u);
  EXPECT_EQ(tpus[0].pod->workers[1].host_key_alias, "tpu.9-1");
  EXPECT_EQ(tpus[0].pod->gcloud->zone, "z");
  EXPECT_EQ(tpus[0].pod->ssh.user, "u");
  EXPECT_EQ(tpus[1].state, "PREEMPTED");
  EXPECT_FALSE(tpus[1].pod);
  EXPECT_TRUE(tpus[1].error.empty());
  EXPECT_FALSE(tpus[2].pod);  // READY without endpoints: an error, not a pod
  EXPECT_NE(tpus[2].error.find("no network endpoints"), std::string::npos);
  EXPECT_THROW(parse_tpu_list("{}", "z", board), std::runtime_error);
}

}  // namespace
}  // namespace tpurun

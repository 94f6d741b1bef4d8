// The files in configs/ are documentation; this keeps them true.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fakes/system_fakes.hpp"
#include "tpurun/pod/config.hpp"

namespace tpurun {
namespace {

namespace fs = std::filesystem;

// ctest passes the source tree in TPURUN_SOURCE_DIR (__FILE__ is relative
// under ccache's base_dir, so it cannot be trusted to find the repository).
fs::path example(const std::string& name) {
  const char* root = std::getenv("TPURUN_SOURCE_DIR");
  fs::path base = root != nullptr ? fs::path(root)
                                  : fs::path(__FILE__).parent_path().parent_path().parent_path().parent_path();
  return base / "configs" / name;
}

ConfigFile parse_example(const std::string& name) {
  std::ifstream in(example(name));
  std::stringstream text;
  text << in.rdbuf();
  testing::FakeEnvironment env(
      std::map<std::string, std::string>{{"HOME", "/home/alice"}, {"USER", "alice"}});
  return parse_config(text.str(), name, env);
}

TEST(ExampleConfigsTest, SimulatorConfigParses) {
  ASSERT_TRUE(fs::exists(example("sim.jsonc"))) << example("sim.jsonc");
  ConfigFile config = parse_example("sim.jsonc");
  EXPECT_EQ(config.default_pod, "sim");
  EXPECT_EQ(config.pods.at("sim").workers.size(), 4u);
  EXPECT_EQ(config.pods.at("sim").ssh.identity_file, "/home/alice/.ssh/id_ed25519");
  EXPECT_EQ(config.pods.at("sim").staging_root, "/srv/tpurun-nfs/staging");
}

TEST(ExampleConfigsTest, GcloudConfigParses) {
  ASSERT_TRUE(fs::exists(example("gcloud-v4-32.jsonc")));
  ConfigFile config = parse_example("gcloud-v4-32.jsonc");
  const PodConfig& pod = config.pods.at("v4-32");
  ASSERT_TRUE(pod.gcloud.has_value());
  EXPECT_EQ(pod.gcloud->name, "kmh-tpuvm-v4-32-1");
  EXPECT_EQ(pod.ssh.identity_file, "/home/alice/.ssh/google_compute_engine");
}

TEST(ExampleConfigsTest, MultisliceConfigParses) {
  ASSERT_TRUE(fs::exists(example("multislice.jsonc")));
  ConfigFile config = parse_example("multislice.jsonc");
  const PodConfig& pod = config.pods.at("v4-ab");
  ASSERT_EQ(pod.slices.size(), 2u);
  EXPECT_EQ(pod.slices[0].pod, "v4-a");
  ASSERT_TRUE(pod.slices[1].gcloud.has_value());
  EXPECT_EQ(pod.slices[1].gcloud->name, "kmh-tpuvm-v4-32-b");
  EXPECT_EQ(pod.megascale_port, 8080);
}

}  // namespace
}  // namespace tpurun

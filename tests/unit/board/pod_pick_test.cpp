// --pod auto / glob: which names are patterns, and the config order the pick follows.
#include "tpurun/board/pod_pick.hpp"

#include <gtest/gtest.h>

#include "fakes/system_fakes.hpp"
#include "tpurun/pod/config.hpp"

namespace tpurun {
namespace {

TEST(PodPickTest, AutoAndGlobsArePatternsPlainNamesAreNot) {
  EXPECT_TRUE(is_pod_pattern("auto"));
  EXPECT_TRUE(is_pod_pattern("v4-32*"));
  EXPECT_TRUE(is_pod_pattern("v4-?"));
  EXPECT_TRUE(is_pod_pattern("v4-[ab]"));
  EXPECT_FALSE(is_pod_pattern("v4-32-a"));
  EXPECT_FALSE(is_pod_pattern(""));
}

TEST(PodPickTest, TheConfigKeepsPodsInFileOrder) {
  tpurun::testing::FakeEnvironment env{std::map<std::string, std::string>{{"HOME", "/home/f"}, {"USER", "f"}}};
  ConfigFile config = parse_config(R"({ "pods": { "zeta": { "workers": ["10.0.0.1"], "staging_root": "/s", "logs_root": "/l" },
                                                  "alpha": { "workers": ["10.0.0.2"], "staging_root": "/s", "logs_root": "/l" },
                                                  "mid": { "workers": ["10.0.0.3"], "staging_root": "/s", "logs_root": "/l" } } })",
                                   "t.json", env);
  EXPECT_EQ(config.order, (std::vector<std::string>{"zeta", "alpha", "mid"}));
}

}  // namespace
}  // namespace tpurun

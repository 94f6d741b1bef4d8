// A kept describe: used while young and READY, off with max age 0.
#include "tpurun/pod/describe_cache.hpp"

#include <gtest/gtest.h>

#include "fakes/system_fakes.hpp"
#include "fakes/temp_dir.hpp"

namespace tpurun {
namespace {

constexpr const char* kReady = R"({"name": "n/t", "id": "9", "state": "READY",
                                   "networkEndpoints": [{"ipAddress": "10.0.0.2"}]})";

TEST(DescribeCacheTest, AReadyAnswerIsKeptAndReadBack) {
  testing::TempDir temp;
  testing::FakeEnvironment env(std::map<std::string, std::string>{{"XDG_CACHE_HOME", temp.path()}});
  const GcloudSpec spec{"t", "z", "p", true};
  EXPECT_FALSE(read_kept_describe(spec, env));
  keep_describe(spec, parse_tpu_node(kReady, true), env);
  auto kept = read_kept_describe(spec, env);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->workers.at(0).host, "10.0.0.2");
  EXPECT_EQ(kept->workers.at(0).host_key_alias, "tpu.9-0");
  // another spec (external addresses) is another entry
  EXPECT_FALSE(read_kept_describe(GcloudSpec{"t", "z", "p", false}, env));
  forget_describe(spec, env);
  EXPECT_FALSE(read_kept_describe(spec, env));
}

TEST(DescribeCacheTest, NotReadyIsNeverKeptAndMaxAgeZeroTurnsItOff) {
  testing::TempDir temp;
  testing::FakeEnvironment env(std::map<std::string, std::string>{{"XDG_CACHE_HOME", temp.path()}});
  const GcloudSpec spec{"t", "z", "", true};
  keep_describe(spec, parse_tpu_node(R"({"name": "t", "state": "PREEMPTED"})", true), env);
  EXPECT_FALSE(read_kept_describe(spec, env));
  testing::FakeEnvironment off(
      std::map<std::string, std::string>{{"XDG_CACHE_HOME", temp.path()}, {"TPURUN_DESCRIBE_MAX_AGE", "0"}});
  keep_describe(spec, parse_tpu_node(kReady, true), off);
  EXPECT_FALSE(read_kept_describe(spec, off));
  EXPECT_FALSE(read_kept_describe(spec, env));  // nothing was written either
}

}  // namespace
}  // namespace tpurun

namespace tpurun {
namespace {

TEST(DescribeCacheKeyTest, AnotherGcloudConfigurationKeepsItsOwnAnswers) {
  testing::TempDir temp;
  const GcloudSpec spec{"t", "z", "p", true};
  testing::FakeEnvironment a(std::map<std::string, std::string>{{"XDG_CACHE_HOME", temp.path()},
                                                                {"CLOUDSDK_CONFIG", "/home/alice/.sim-a"}});
  testing::FakeEnvironment b(std::map<std::string, std::string>{{"XDG_CACHE_HOME", temp.path()},
                                                                {"CLOUDSDK_CONFIG", "/home/alice/.sim-b"}});
  EXPECT_NE(describe_cache_path(spec, a), describe_cache_path(spec, b));
  keep_describe(spec, parse_tpu_node(kReady, true), a);
  EXPECT_TRUE(read_kept_describe(spec, a));
  EXPECT_FALSE(read_kept_describe(spec, b));
}

}  // namespace
}  // namespace tpurun

// find_config_file and load_pod: where the config comes from and which pod
// is meant (--pod > TPURUN_POD > default_pod > the only pod).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/system_fakes.hpp"
#include "fakes/temp_dir.hpp"
#include "tpurun/pod/config.hpp"

namespace tpurun {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tpurun::testing::FakeEnvironment;
using tpurun::testing::FakeProcessRunner;
using tpurun::testing::ScopedChdir;
using tpurun::testing::TempDir;

std::string plain_pod(const std::string& host) {
  return "{\"workers\": [\"" + host + "\"], \"staging_root\": \"/s\", \"logs_root\": \"/l\"}";
}

const std::string kTwoPods = "{\"pods\": {\"alpha\": " + plain_pod("10.0.0.1") +
                             ", \"beta\": " + plain_pod("10.0.0.2") + "}}";

class ConfigLoadTest : public ::testing::Test {
 protected:
  ConfigLoadTest()
      : cwd_(temp_.path()),
        env_(std::map<std::string, std::string>{{"HOME", temp_.path() + "/home"},
                                                {"USER", "alice"}}) {}

  std::string load_error(const PodRequest& request) {
    try {
      load_pod(request, env_, runner_);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(no error)";
  }

  TempDir temp_;
  ScopedChdir cwd_;  // the test's current directory is the empty temp_
  FakeEnvironment env_;
  FakeProcessRunner runner_;
};

TEST_F(ConfigLoadTest, FindsNothingInAnEmptyWorld) {
  EXPECT_EQ(find_config_file(std::nullopt, env_), std::nullopt);
}

TEST_F(ConfigLoadTest, PrefersTheCurrentDirectoryOverTheUserConfig) {
  // given both a ./tpurun.json and ~/.config/tpurun/config.json
  std::string user_config = temp_.write("home/.config/tpurun/config.json", "{}");
  EXPECT_EQ(find_config_file(std::nullopt, env_), user_config);
  temp_.write("tpurun.json", "{}");
  // then the local file wins
  EXPECT_EQ(find_config_file(std::nullopt, env_), "tpurun.json");
}

TEST_F(ConfigLoadTest, HonoursXdgConfigHome) {
  std::string xdg_config = temp_.write("xdg/tpurun/config.json", "{}");
  temp_.write("home/.config/tpurun/config.json", "{}");
  env_.set("XDG_CONFIG_HOME", temp_.path() + "/xdg");
  EXPECT_EQ(find_config_file(std::nullopt, env_), xdg_config);
  // a relative XDG_CONFIG_HOME is invalid by the XDG spec and ignored
  env_.set("XDG_CONFIG_HOME", "xdg");
  EXPECT_EQ(find_config_file(std::nullopt, env_),
            temp_.path() + "/home/.config/tpurun/config.json");
}

TEST_F(ConfigLoadTest, ExplicitConfigMustExist) {
  temp_.write("tpurun.json", "{}");
  std::string mine = temp_.write("mine.jsonc", "{}");
  EXPECT_EQ(find_config_file(mine, env_), mine);
  EXPECT_THROW(find_config_file(std::string("missing.json"), env_), ConfigError);
  try {
    find_config_file(std::string("missing.json"), env_);
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "missing.json: no such config file (given with --config)");
  }
  EXPECT_THAT(load_error({std::string(temp_.path()), std::nullopt, {}}),
              HasSubstr("not a regular file"));
}

TEST_F(ConfigLoadTest, NoConfigAndNoPodMeansTheLocalPod) {
  // given no config file anywhere and no pod asked for
  PodConfig pod = load_pod({}, env_, runner_);
  // then the pod is this host alone, and nothing was run
  EXPECT_EQ(pod.name, "local");
  EXPECT_TRUE(pod.local);
  ASSERT_EQ(pod.workers.size(), 1u);
  EXPECT_EQ(pod.workers[0].index, 0);
  EXPECT_EQ(pod.workers[0].host, "localhost");
  EXPECT_EQ(pod.ssh.user, "alice");
  EXPECT_TRUE(runner_.calls.empty());
  // and code and logs stay on this host's own disk (it is the worker too)
  EXPECT_EQ(pod.staging_root, temp_.path() + "/home/.tpurun/staging");
  EXPECT_EQ(pod.logs_root, temp_.path() + "/home/.tpurun/logs");
  EXPECT_TRUE(pod.shared_mount);
}

TEST_F(ConfigLoadTest, APodWithoutRootsHasNoSharedMount) {
  temp_.write("tpurun.json", "{\"pods\": {\"a\": {\"workers\": [\"10.0.0.1\", \"10.0.0.2\"]},\n"
                             "\"b\": {\"workers\": [\"10.0.0.3\"], \"local_root\": \"/mnt/disk/tpurun\"}}}");
  PodRequest request;
  request.pod = "a";
  PodConfig a = load_pod(request, env_, runner_);
  EXPECT_FALSE(a.shared_mount);
  EXPECT_EQ(a.worker_root, "~/.tpurun");  // on each worker, in the remote user's home
  EXPECT_EQ(a.staging_root, temp_.path() + "/home/.tpurun/staging");  // here, this host's copies
  EXPECT_EQ(a.logs_root, temp_.path() + "/home/.tpurun/logs");
  request.pod = "b";
  PodConfig b = load_pod(request, env_, runner_);
  EXPECT_EQ(b.worker_root, "/mnt/disk/tpurun");
  EXPECT_EQ(b.logs_root, "/mnt/disk/tpurun/logs");
}

TEST_F(ConfigLoadTest, PodRequestedWithoutConfigSaysWhereItLooked) {
  EXPECT_EQ(
      load_error({std::nullopt, std::string("sim"), {}}),
      "pod 'sim' requested (--pod) but there is no config file; looked for ./tpurun.json and " +
          temp_.path() + "/home/.config/tpurun/config.json");
  env_.set("TPURUN_POD", "sim");
  EXPECT_THAT(load_error({}),
              HasSubstr("pod 'sim' requested (TPURUN_POD) but there is no config file"));
}

TEST_F(ConfigLoadTest, PodFlagBeatsEnvironmentBeatsDefault) {
  // given three pods, a default, and TPURUN_POD naming another
  temp_.write("tpurun.json", "{\"default_pod\": \"alpha\", \"pods\": {\"alpha\": " +
                                 plain_pod("10.0.0.1") + ", \"beta\": " + plain_pod("10.0.0.2") +
                                 ", \"gamma\": " + plain_pod("10.0.0.3") + "}}");
  EXPECT_EQ(load_pod({}, env_, runner_).name, "alpha");
  env_.set("TPURUN_POD", "beta");
  EXPECT_EQ(load_pod({}, env_, runner_).name, "beta");
  EXPECT_EQ(load_pod({std::nullopt, std::string("gamma"), {}}, env_, runner_).name, "gamma");
  // an empty TPURUN_POD counts as unset
  env_.set("TPURUN_POD", "");
  EXPECT_EQ(load_pod({}, env_, runner_).name, "alpha");
}

TEST_F(ConfigLoadTest, SinglePodNeedsNoDefault) {
  temp_.write("tpurun.json", "{\"pods\": {\"only\": " + plain_pod("10.0.0.9") + "}}");
  PodConfig pod = load_pod({}, env_, runner_);
  EXPECT_EQ(pod.name, "only");
  EXPECT_FALSE(pod.local);
  EXPECT_EQ(pod.workers[0].host, "10.0.0.9");
}

TEST_F(ConfigLoadTest, SeveralPodsAndNoChoiceIsAnError) {
  temp_.write("tpurun.json", kTwoPods);
  EXPECT_EQ(load_error({}),
            "tpurun.json: several pods (alpha, beta) and none chosen: pass --pod NAME, set "
            "TPURUN_POD, or add "
            "\"default_pod\"");
}

TEST_F(ConfigLoadTest, UnknownPodSuggestsAndLists) {
  temp_.write("tpurun.json", kTwoPods);
  EXPECT_EQ(
      load_error({std::nullopt, std::string("bta"), {}}),
      "tpurun.json: no pod named 'bta' (from --pod) (did you mean 'beta'?); pods: alpha, beta");
  env_.set("TPURUN_POD", "zzz");
  EXPECT_EQ(load_error({}), "tpurun.json: no pod named 'zzz' (from TPURUN_POD); pods: alpha, beta");
}

TEST_F(ConfigLoadTest, UsesTheExplicitConfigFile) {
  temp_.write("tpurun.json", kTwoPods);
  std::string other =
      temp_.write("other.json", "{\"pods\": {\"other\": " + plain_pod("10.9.9.9") + "}}");
  EXPECT_EQ(load_pod({other, std::nullopt, {}}, env_, runner_).name, "other");
}

TEST_F(ConfigLoadTest, ConfigErrorsNameTheFileFound) {
  temp_.write("tpurun.json", "{\n\"pods\": 3}");
  EXPECT_EQ(load_error({}), "tpurun.json:2: pods: expected an object, found an integer (3)");
}

TEST_F(ConfigLoadTest, OverridesWinOverTheFile) {
  // given a pod file and every command-line override
  temp_.write("tpurun.json", "{\"pods\": {\"only\": " + plain_pod("10.0.0.9") + "}}");
  PodRequest request;
  request.overrides = {std::string("root"), std::string("~/.ssh/other"), HostKeyPolicy::off, 42};
  PodConfig pod = load_pod(request, env_, runner_);
  // then they replace the file's values, with ~ expanded
  EXPECT_EQ(pod.ssh.user, "root");
  EXPECT_EQ(pod.ssh.identity_file, temp_.path() + "/home/.ssh/other");
  EXPECT_EQ(pod.ssh.host_key_policy, HostKeyPolicy::off);
  EXPECT_EQ(pod.ssh.connect_timeout_s, 42);
}

TEST_F(ConfigLoadTest, PodWithoutAnyUserIsAnError) {
  temp_.write("tpurun.json", "{\"pods\": {\"only\": " + plain_pod("10.0.0.9") + "}}");
  env_.unset("USER");
  EXPECT_THAT(load_error({}), HasSubstr("pod 'only': no SSH user"));
  PodRequest request;
  request.overrides.user = "bob";
  EXPECT_EQ(load_pod(request, env_, runner_).ssh.user, "bob");
}

}  // namespace
}  // namespace tpurun

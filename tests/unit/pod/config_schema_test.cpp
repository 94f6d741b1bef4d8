// parse_config on valid files: where each value lands, and the defaults.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "pod/config_schema_fixture.hpp"

namespace tpurun {
namespace {

using ::testing::ElementsAre;
using tpurun::testing::ConfigSchemaTest;

TEST_F(ConfigSchemaTest, ReadsAFullPlainPod) {
  // given every key of a plain pod
  ConfigFile config = parse(R"({
    "default_pod": "sim",
    "pods": {
      "sim": {
        "workers": ["127.0.1.1", "127.0.1.2:2222", "host.example", "[::1]:2200", "[fe80::1]"],
        "ssh": { "user": "bob", "identity_file": "~/.ssh/id_ed25519",
                 "known_hosts": "~/.ssh/sim_hosts", "host_key_policy": "strict",
                 "connect_timeout_s": 3 },
        "staging_root": "/srv/nfs/staging/", "logs_root": "/srv/nfs/logs",
        "device_globs": ["/tmp/sim/dev/accel*"],
        "stage_size_limit": "500MB"
      }
    }
  })");
  // then every value lands where it belongs
  EXPECT_EQ(config.path, "tpurun.json");
  EXPECT_EQ(config.default_pod, "sim");
  const PodConfig& pod = config.pods.at("sim");
  EXPECT_EQ(pod.name, "sim");
  ASSERT_EQ(pod.workers.size(), 5u);
  EXPECT_EQ(pod.workers[1].index, 1);
  EXPECT_EQ(pod.workers[1].host, "127.0.1.2");
  EXPECT_EQ(pod.workers[1].port, 2222);
  EXPECT_EQ(pod.workers[2].host, "host.example");
  EXPECT_EQ(pod.workers[2].port, 22);
  EXPECT_EQ(pod.workers[3].host, "::1");
  EXPECT_EQ(pod.workers[3].port, 2200);
  EXPECT_EQ(pod.workers[4].host, "fe80::1");
  EXPECT_EQ(pod.ssh.user, "bob");
  EXPECT_EQ(pod.ssh.identity_file, "/home/alice/.ssh/id_ed25519");
  EXPECT_THAT(pod.ssh.known_hosts, ElementsAre("/home/alice/.ssh/sim_hosts"));
  EXPECT_EQ(pod.ssh.host_key_policy, HostKeyPolicy::strict);
  EXPECT_EQ(pod.ssh.connect_timeout_s, 3);
  EXPECT_EQ(pod.staging_root, "/srv/nfs/staging");  // trailing slash dropped
  EXPECT_EQ(pod.logs_root, "/srv/nfs/logs");
  EXPECT_THAT(pod.device_globs, ElementsAre("/tmp/sim/dev/accel*"));
  EXPECT_EQ(pod.stage_size_limit, 500'000'000u);
  EXPECT_FALSE(pod.gcloud.has_value());
  EXPECT_FALSE(pod.local);
}

TEST_F(ConfigSchemaTest, PlainPodDefaults) {
  // given a pod with nothing but the required keys
  PodConfig pod = parse(pod_with("")).pods.at("sim");
  // then SSH follows OpenSSH's habits and the device globs cover all TPU generations
  EXPECT_EQ(pod.ssh.user, "alice");
  EXPECT_EQ(pod.ssh.identity_file, "");
  EXPECT_THAT(pod.ssh.known_hosts, ElementsAre("/home/alice/.ssh/known_hosts"));
  EXPECT_EQ(pod.ssh.host_key_policy, HostKeyPolicy::accept_new);
  EXPECT_EQ(pod.ssh.connect_timeout_s, 10);
  EXPECT_THAT(pod.device_globs, ElementsAre("/dev/accel*", "/dev/vfio/[0-9]*"));
  EXPECT_EQ(pod.stage_size_limit, 1ull << 30);
}

TEST_F(ConfigSchemaTest, GcloudPodDefaultsFollowGcloud) {
  // given a gcloud pod without an ssh block
  ConfigFile config = parse(R"({"pods": {"v4": {
      "gcloud": {"name": "kmh-tpuvm-v4-32-1", "zone": "us-central2-b"},
      "staging_root": "/nfs/s", "logs_root": "/nfs/l"}}})");
  const PodConfig& pod = config.pods.at("v4");
  // then it uses gcloud's key and known-hosts file, and has no workers until described
  EXPECT_EQ(pod.ssh.identity_file, "/home/alice/.ssh/google_compute_engine");
  EXPECT_THAT(pod.ssh.known_hosts, ElementsAre("/home/alice/.ssh/google_compute_known_hosts",
                                               "/home/alice/.ssh/known_hosts"));
  EXPECT_TRUE(pod.workers.empty());
  ASSERT_TRUE(pod.gcloud.has_value());
  EXPECT_EQ(pod.gcloud->name, "kmh-tpuvm-v4-32-1");
  EXPECT_EQ(pod.gcloud->zone, "us-central2-b");
  EXPECT_EQ(pod.gcloud->project, "");
  EXPECT_TRUE(pod.gcloud->internal_ip);
}

TEST_F(ConfigSchemaTest, GcloudPodKeepsExplicitSshSettings) {
  ConfigFile config = parse(R"({"pods": {"v4": {
      "gcloud": {"name": "n", "zone": "z", "project": "p", "internal_ip": false},
      "ssh": {"identity_file": "", "known_hosts": ["/etc/hosts_a", "~/b"]},
      "staging_root": "/nfs/s", "logs_root": "/nfs/l"}}})");
  const PodConfig& pod = config.pods.at("v4");
  EXPECT_EQ(pod.gcloud->project, "p");
  EXPECT_FALSE(pod.gcloud->internal_ip);
  EXPECT_EQ(pod.ssh.identity_file, "");  // explicit "" means ssh-agent
  EXPECT_THAT(pod.ssh.known_hosts, ElementsAre("/etc/hosts_a", "/home/alice/b"));
}

TEST_F(ConfigSchemaTest, UserFallsBackToLognameThenEmpty) {
  env_.unset("USER");
  env_.set("LOGNAME", "carol");
  EXPECT_EQ(parse(pod_with("")).pods.at("sim").ssh.user, "carol");
  env_.unset("LOGNAME");
  EXPECT_EQ(parse(pod_with("")).pods.at("sim").ssh.user, "");  // load_pod complains if it is used
}

TEST_F(ConfigSchemaTest, StageSizeLimitAcceptsBytesAndUnits) {
  auto limit = [&](const std::string& value) {
    return parse(pod_with("      \"stage_size_limit\": " + value + ",\n"))
        .pods.at("sim")
        .stage_size_limit;
  };
  EXPECT_EQ(limit("4096"), 4096u);
  EXPECT_EQ(limit("1e9"), 1'000'000'000u);
  EXPECT_EQ(limit("\"1GiB\""), 1ull << 30);
  EXPECT_EQ(limit("\"2 mib\""), 2ull << 20);
}

}  // namespace
}  // namespace tpurun

namespace tpurun {
namespace {

using tpurun::testing::ConfigSchemaTest;

TEST_F(ConfigSchemaTest, SetupIsAScriptBesideTheConfigFile) {
  // a relative path is the config file's neighbour, wherever tpurun runs
  ConfigFile config = parse_config(pod_with("      \"setup\": \"scripts/setup.sh\",\n"), "/work/proj/tpurun.json", env_);
  EXPECT_EQ(config.pods.at("sim").setup_script, "/work/proj/scripts/setup.sh");
  config = parse_config(pod_with("      \"setup\": \"~/setup.sh\",\n"), "/work/proj/tpurun.json", env_);
  EXPECT_EQ(config.pods.at("sim").setup_script, "/home/alice/setup.sh");
  config = parse_config(pod_with("      \"setup\": \"/opt/setup.sh\",\n"), "/work/proj/tpurun.json", env_);
  EXPECT_EQ(config.pods.at("sim").setup_script, "/opt/setup.sh");
  EXPECT_EQ(parse(pod_with("")).pods.at("sim").setup_script, "");
  EXPECT_EQ(error(pod_with("      \"setup\": \"\",\n")), "tpurun.json:4: pods.sim.setup: must not be empty");
}

TEST_F(ConfigSchemaTest, SetupBesideAConfigFoundInTheCurrentDir) {
  // given: ./tpurun.json found implicitly, so its path has no directory part
  // when: its pod names a relative setup script
  ConfigFile config = parse(pod_with("      \"setup\": \"setup.sh\",\n"));
  // then: the script is the current dir's (it was a crash: absolute("") throws)
  EXPECT_EQ(config.pods.at("sim").setup_script, (std::filesystem::current_path() / "setup.sh").string());
}

}  // namespace
}  // namespace tpurun

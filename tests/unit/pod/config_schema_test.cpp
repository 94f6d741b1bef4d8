// parse_config: what a valid file turns into, and how each kind of mistake
// is reported (always with file:line and the key path).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/system_fakes.hpp"
#include "tpurun/config.hpp"

namespace tpurun {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tpurun::testing::FakeEnvironment;

class ConfigSchemaTest : public ::testing::Test {
 protected:
  ConfigSchemaTest() : env_(std::map<std::string, std::string>{{"HOME", "/home/alice"}, {"USER", "alice"}}) {}

  ConfigFile parse(const std::string& text) { return parse_config(text, "tpurun.json", env_); }

  std::string error(const std::string& text) {
    try {
      parse(text);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(no error)";
  }

  // A minimal valid pod with `extra` spliced in as its first members.
  static std::string pod_with(const std::string& extra) {
    return "{\n"
           "  \"pods\": {\n"
           "    \"sim\": {\n" +
           extra +
           "      \"workers\": [\"127.0.1.1\"],\n"
           "      \"staging_root\": \"/srv/staging\", \"logs_root\": \"/srv/logs\"\n"
           "    }\n"
           "  }\n"
           "}\n";
  }

  // A gcloud pod whose "gcloud" object is `body`, on line 4.
  static std::string gcloud_pod(const std::string& body) {
    return "{\n"
           "  \"pods\": {\n"
           "    \"v4\": {\n"
           "      \"gcloud\": " + body + ",\n"
           "      \"staging_root\": \"/srv/staging\", \"logs_root\": \"/srv/logs\"\n"
           "    }\n"
           "  }\n"
           "}\n";
  }

  FakeEnvironment env_;
};

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
  EXPECT_THAT(pod.ssh.known_hosts,
              ElementsAre("/home/alice/.ssh/google_compute_known_hosts", "/home/alice/.ssh/known_hosts"));
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
    return parse(pod_with("      \"stage_size_limit\": " + value + ",\n")).pods.at("sim").stage_size_limit;
  };
  EXPECT_EQ(limit("4096"), 4096u);
  EXPECT_EQ(limit("1e9"), 1'000'000'000u);
  EXPECT_EQ(limit("\"1GiB\""), 1ull << 30);
  EXPECT_EQ(limit("\"2 mib\""), 2ull << 20);
}

TEST_F(ConfigSchemaTest, UnknownKeySuggestsTheClosestKnownKey) {
  // given a typo on line 7
  std::string text = R"({
  "pods": {
    "sim": {
      "workers": ["127.0.1.1"],
      "staging_root": "/s", "logs_root": "/l",
      "ssh": {
        "hots_key_policy": "strict"
      }
    }
  }
})";
  EXPECT_EQ(error(text), "tpurun.json:7: pods.sim.ssh.hots_key_policy: unknown key (did you mean 'host_key_policy'?)");
}

TEST_F(ConfigSchemaTest, UnknownKeyWithoutCloseMatchListsTheKnownKeys) {
  EXPECT_EQ(error("{\"pods\": {}, \"colour\": 1}"),
            "tpurun.json:1: colour: unknown key (expected one of: default_pod pods)");
  EXPECT_THAT(error(pod_with("      \"worker\": [],\n")),
              HasSubstr("tpurun.json:4: pods.sim.worker: unknown key (did you mean 'workers'?)"));
  EXPECT_EQ(error(gcloud_pod("{\"name\": \"n\", \"zone\": \"z\", \"region\": \"r\"}")),
            "tpurun.json:4: pods.v4.gcloud.region: unknown key (expected one of: name zone project internal_ip)");
}

TEST_F(ConfigSchemaTest, FirstUnknownKeyInFileOrderIsReported) {
  // given two unknown keys, the later one sorting first alphabetically
  EXPECT_THAT(error("{\n\"zz\": 1,\n\"aa\": 2,\n\"pods\": {}}"), HasSubstr("tpurun.json:2: zz: unknown key"));
}

TEST_F(ConfigSchemaTest, WrongTypesSayWhatWasFound) {
  EXPECT_EQ(error(pod_with("      \"ssh\": {\"connect_timeout_s\": \"10\"},\n")),
            "tpurun.json:4: pods.sim.ssh.connect_timeout_s: expected an integer, found a string (\"10\")");
  EXPECT_EQ(error(pod_with("      \"ssh\": {\"connect_timeout_s\": 2.5},\n")),
            "tpurun.json:4: pods.sim.ssh.connect_timeout_s: expected an integer, found a number (2.5)");
  EXPECT_EQ(error(pod_with("      \"ssh\": \"alice\",\n")),
            "tpurun.json:4: pods.sim.ssh: expected an object, found a string (\"alice\")");
  EXPECT_EQ(error(gcloud_pod("{\"name\": \"n\", \"zone\": \"z\", \"internal_ip\": \"yes\"}")),
            "tpurun.json:4: pods.v4.gcloud.internal_ip: expected true or false, found a string (\"yes\")");
  EXPECT_THAT(error(gcloud_pod("{\"name\": 7, \"zone\": \"z\"}")),
              HasSubstr("pods.v4.gcloud.name: expected a string, found an integer (7)"));
  EXPECT_EQ(error("[1]"), "tpurun.json:1: the top level must be an object, found an array");
  EXPECT_THAT(error("{\"pods\": []}"), HasSubstr("tpurun.json:1: pods: expected an object, found an array"));
}

TEST_F(ConfigSchemaTest, WorkersMustBeValidAddresses) {
  auto workers_error = [&](const std::string& list) {
    return error("{\"pods\": {\"sim\": {\n\"staging_root\": \"/s\", \"logs_root\": \"/l\",\n\"workers\": [\n" + list +
                 "]}}}");
  };
  EXPECT_EQ(workers_error("\"a\",\n\"b:0\""),
            "tpurun.json:5: pods.sim.workers[1]: port '0' is not a number from 1 to 65535");
  EXPECT_THAT(workers_error("\"b:ssh\""), HasSubstr("port 'ssh' is not a number"));
  EXPECT_THAT(workers_error("\"b:\""), HasSubstr("missing port after ':'"));
  EXPECT_THAT(workers_error("\"::1\""), HasSubstr("write IPv6 addresses in brackets"));
  EXPECT_THAT(workers_error("\"[::1\""), HasSubstr("missing ']'"));
  EXPECT_THAT(workers_error("\"[host]\""), HasSubstr("brackets are only for IPv6"));
  EXPECT_THAT(workers_error("\"alice@host\""), HasSubstr("put the user in ssh.user"));
  EXPECT_THAT(workers_error("\"a b\""), HasSubstr("' ' is not allowed"));
  EXPECT_THAT(workers_error("\"\""), HasSubstr("empty host"));
  EXPECT_THAT(workers_error("3"), HasSubstr("pods.sim.workers[0]: expected a string, found an integer (3)"));
  EXPECT_EQ(workers_error(""), "tpurun.json:3: pods.sim.workers: a pod needs at least one worker");
}

TEST_F(ConfigSchemaTest, PodNeedsExactlyOneOfWorkersAndGcloud) {
  EXPECT_EQ(error("{\"pods\": {\n\"sim\": {\"staging_root\": \"/s\", \"logs_root\": \"/l\"}}}"),
            "tpurun.json:2: pods.sim: missing \"workers\" (a list of hosts) or \"gcloud\" (a TPU VM to describe)");
  EXPECT_THAT(error(pod_with("      \"gcloud\": {\"name\": \"n\", \"zone\": \"z\"},\n")),
              HasSubstr("tpurun.json:4: pods.sim.gcloud: a pod has either \"workers\" or \"gcloud\", not both"));
}

TEST_F(ConfigSchemaTest, MissingRequiredKeysPointAtTheirObject) {
  EXPECT_EQ(error("{\"pods\": {\n\"sim\": {\"workers\": [\"a\"], \"logs_root\": \"/l\"}}}"),
            "tpurun.json:2: pods.sim: missing required key \"staging_root\"");
  EXPECT_EQ(error(gcloud_pod("{\"name\": \"n\"}")), "tpurun.json:4: pods.v4.gcloud: missing required key \"zone\"");
  EXPECT_EQ(error("{}"), "tpurun.json:1: missing required key \"pods\"");
  EXPECT_EQ(error("{\"pods\": {}}"), "tpurun.json:1: pods: no pods defined");
}

TEST_F(ConfigSchemaTest, BadPolicyListsTheChoices) {
  EXPECT_EQ(error(pod_with("      \"ssh\": {\"host_key_policy\": \"accept_new\"},\n")),
            "tpurun.json:4: pods.sim.ssh.host_key_policy: unknown policy 'accept_new' (did you mean "
            "'accept-new'?); use strict, accept-new or off");
  EXPECT_THAT(error(pod_with("      \"ssh\": {\"host_key_policy\": \"yes\"},\n")),
              HasSubstr("unknown policy 'yes'; use strict, accept-new or off"));
}

TEST_F(ConfigSchemaTest, TimeoutMustBePositive) {
  EXPECT_EQ(error(pod_with("      \"ssh\": {\"connect_timeout_s\": 0},\n")),
            "tpurun.json:4: pods.sim.ssh.connect_timeout_s: must be a positive number of seconds");
  EXPECT_THAT(error(pod_with("      \"ssh\": {\"connect_timeout_s\": -5},\n")), HasSubstr("must be a positive"));
  EXPECT_THAT(error(pod_with("      \"ssh\": {\"connect_timeout_s\": 99999999999},\n")), HasSubstr("at most 86400"));
}

TEST_F(ConfigSchemaTest, DefaultPodMustExist) {
  EXPECT_EQ(error("{\n\"default_pod\": \"simm\",\n\"pods\": {\"sim\": {\"workers\": [\"a\"], \"staging_root\": \"/s\", "
                  "\"logs_root\": \"/l\"}}}"),
            "tpurun.json:2: default_pod: no pod named 'simm' (did you mean 'sim'?); pods: sim");
  EXPECT_THAT(error("{\"default_pod\": \"\", \"pods\": {\"sim\": {\"workers\": [\"a\"], \"staging_root\": \"/s\", "
                  "\"logs_root\": \"/l\"}}}"),
              HasSubstr("default_pod: must not be empty"));
}

TEST_F(ConfigSchemaTest, RemoteDirectoriesMustBeAbsolute) {
  EXPECT_THAT(error("{\"pods\": {\"sim\": {\"workers\": [\"a\"], \"staging_root\": \"~/s\", \"logs_root\": \"/l\"}}}"),
              HasSubstr("pods.sim.staging_root: must be an absolute path"));
  EXPECT_THAT(error("{\"pods\": {\"sim\": {\"workers\": [\"a\"], \"staging_root\": \"/s\", \"logs_root\": \"\"}}}"),
              HasSubstr("pods.sim.logs_root: must not be empty"));
}

TEST_F(ConfigSchemaTest, DeviceGlobsMustBeAbsoluteAndNonEmpty) {
  EXPECT_THAT(error(pod_with("      \"device_globs\": [],\n")),
              HasSubstr("tpurun.json:4: pods.sim.device_globs: list at least one device pattern"));
  EXPECT_THAT(error(pod_with("      \"device_globs\": [\"accel*\"],\n")),
              HasSubstr("pods.sim.device_globs[0]: must be an absolute path pattern"));
}

TEST_F(ConfigSchemaTest, KnownHostsMustBeFileNames) {
  EXPECT_THAT(error(pod_with("      \"ssh\": {\"known_hosts\": []},\n")), HasSubstr("list at least one known_hosts file"));
  EXPECT_THAT(error(pod_with("      \"ssh\": {\"known_hosts\": 3},\n")),
              HasSubstr("pods.sim.ssh.known_hosts: expected a file name or an array of them"));
  EXPECT_THAT(error(pod_with("      \"ssh\": {\"known_hosts\": [\"\"]},\n")),
              HasSubstr("pods.sim.ssh.known_hosts[0]: must not be empty"));
}

TEST_F(ConfigSchemaTest, StageSizeLimitRejectsNonsense) {
  EXPECT_THAT(error(pod_with("      \"stage_size_limit\": \"lots\",\n")),
              HasSubstr("tpurun.json:4: pods.sim.stage_size_limit: expected a number of bytes or a size such as"));
  EXPECT_THAT(error(pod_with("      \"stage_size_limit\": -1,\n")), HasSubstr("expected a number of bytes"));
  EXPECT_THAT(error(pod_with("      \"stage_size_limit\": 0,\n")), HasSubstr("must be positive"));
  EXPECT_THAT(error(pod_with("      \"stage_size_limit\": 1.5,\n")), HasSubstr("expected a number of bytes"));
}

TEST_F(ConfigSchemaTest, PodNamesAreRestricted) {
  EXPECT_THAT(error("{\"pods\": {\"my pod\": {}}}"), HasSubstr("pods.my pod: pod names may contain only"));
  EXPECT_THAT(error("{\"pods\": {\"-x\": {}}}"), HasSubstr("pod names may contain only"));
}

TEST_F(ConfigSchemaTest, SyntaxErrorsComeThroughWithColumn) {
  EXPECT_EQ(error("{\"pods\": {\n  \"sim\": {,}}}"), "tpurun.json:2:11: expected a string key or '}', found ','");
}

}  // namespace
}  // namespace tpurun

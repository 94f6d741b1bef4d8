// parse_config on broken files: each kind of mistake, always reported with
// file:line and the key path.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pod/config_schema_fixture.hpp"

namespace tpurun {
namespace {

using ::testing::HasSubstr;
using ConfigErrorsTest = tpurun::testing::ConfigSchemaTest;

TEST_F(ConfigErrorsTest, UnknownKeySuggestsTheClosestKnownKey) {
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
  EXPECT_EQ(
      error(text),
      "tpurun.json:7: pods.sim.ssh.hots_key_policy: unknown key (did you mean 'host_key_policy'?)");
}

TEST_F(ConfigErrorsTest, UnknownKeyWithoutCloseMatchListsTheKnownKeys) {
  EXPECT_EQ(error("{\"pods\": {}, \"colour\": 1}"),
            "tpurun.json:1: colour: unknown key (expected one of: default_pod pods board)");
  EXPECT_THAT(error(pod_with("      \"worker\": [],\n")),
              HasSubstr("tpurun.json:4: pods.sim.worker: unknown key (did you mean 'workers'?)"));
  EXPECT_EQ(error(gcloud_pod("{\"name\": \"n\", \"zone\": \"z\", \"region\": \"r\"}")),
            "tpurun.json:4: pods.v4.gcloud.region: unknown key (expected one of: name zone project "
            "internal_ip)");
}

TEST_F(ConfigErrorsTest, AWorkerListedTwiceIsRefusedAtItsLine) {
  // the same address, a leading zero the resolver drops, and the default port written out
  for (const char* again : {"127.0.2.1", "127.0.2.01", "127.0.2.1:22"}) {
    const std::string text = std::string("{\n\"pods\": {\"p\": {\"staging_root\": \"/s\", \"logs_root\": \"/l\",\n"
                                         "\"workers\": [\"127.0.2.1\",\n\"") + again + "\"]}}}";
    EXPECT_THAT(error(text), HasSubstr("tpurun.json:4: pods.p.workers[1]: \"" + std::string(again) +
                                       "\" is the same host as worker 0")) << again;
  }
  // another port is another sshd
  EXPECT_EQ(error("{\"pods\": {\"p\": {\"staging_root\": \"/s\", \"logs_root\": \"/l\", "
                  "\"workers\": [\"127.0.2.1\", \"127.0.2.1:2222\"]}}}"),
            "(no error)");
}

TEST_F(ConfigErrorsTest, FirstUnknownKeyInFileOrderIsReported) {
  // given two unknown keys, the later one sorting first alphabetically
  EXPECT_THAT(error("{\n\"zz\": 1,\n\"aa\": 2,\n\"pods\": {}}"),
              HasSubstr("tpurun.json:2: zz: unknown key"));
}

TEST_F(ConfigErrorsTest, WrongTypesSayWhatWasFound) {
  EXPECT_EQ(error(pod_with("      \"ssh\": {\"connect_timeout_s\": \"10\"},\n")),
            "tpurun.json:4: pods.sim.ssh.connect_timeout_s: expected an integer, found a string "
            "(\"10\")");
  EXPECT_EQ(
      error(pod_with("      \"ssh\": {\"connect_timeout_s\": 2.5},\n")),
      "tpurun.json:4: pods.sim.ssh.connect_timeout_s: expected an integer, found a number (2.5)");
  EXPECT_EQ(error(pod_with("      \"ssh\": \"alice\",\n")),
            "tpurun.json:4: pods.sim.ssh: expected an object, found a string (\"alice\")");
  EXPECT_EQ(error(gcloud_pod("{\"name\": \"n\", \"zone\": \"z\", \"internal_ip\": \"yes\"}")),
            "tpurun.json:4: pods.v4.gcloud.internal_ip: expected true or false, found a string "
            "(\"yes\")");
  EXPECT_THAT(error(gcloud_pod("{\"name\": 7, \"zone\": \"z\"}")),
              HasSubstr("pods.v4.gcloud.name: expected a string, found an integer (7)"));
  EXPECT_EQ(error("[1]"), "tpurun.json:1: the top level must be an object, found an array");
  EXPECT_THAT(error("{\"pods\": []}"),
              HasSubstr("tpurun.json:1: pods: expected an object, found an array"));
}

TEST_F(ConfigErrorsTest, WorkersMustBeValidAddresses) {
  auto workers_error = [&](const std::string& list) {
    return error(
        "{\"pods\": {\"sim\": {\n\"staging_root\": \"/s\", \"logs_root\": \"/l\",\n\"workers\": "
        "[\n" +
        list + "]}}}");
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
  EXPECT_THAT(workers_error("3"),
              HasSubstr("pods.sim.workers[0]: expected a string, found an integer (3)"));
  EXPECT_EQ(workers_error(""), "tpurun.json:3: pods.sim.workers: a pod needs at least one worker");
}

TEST_F(ConfigErrorsTest, PodNeedsExactlyOneOfWorkersAndGcloud) {
  EXPECT_EQ(error("{\"pods\": {\n\"sim\": {\"staging_root\": \"/s\", \"logs_root\": \"/l\"}}}"),
            "tpurun.json:2: pods.sim: missing \"workers\" (a list of hosts) or \"gcloud\" (a TPU "
            "VM to describe)");
  EXPECT_THAT(
      error(pod_with("      \"gcloud\": {\"name\": \"n\", \"zone\": \"z\"},\n")),
      HasSubstr(
          "tpurun.json:4: pods.sim.gcloud: a pod has either \"workers\" or \"gcloud\", not both"));
}

TEST_F(ConfigErrorsTest, MissingRequiredKeysPointAtTheirObject) {
  EXPECT_THAT(error("{\"pods\": {\n\"sim\": {\"workers\": [\"a\"],\n \"logs_root\": \"/l\"}}}"),
              HasSubstr("tpurun.json:3: pods.sim.logs_root: give both staging_root and logs_root"));
  EXPECT_EQ(error(gcloud_pod("{\"name\": \"n\"}")),
            "tpurun.json:4: pods.v4.gcloud: missing required key \"zone\"");
  EXPECT_EQ(error("{}"), "tpurun.json:1: missing required key \"pods\"");
  EXPECT_EQ(error("{\"pods\": {}}"), "tpurun.json:1: pods: no pods defined");
}

TEST_F(ConfigErrorsTest, APodWithNoRootsKeepsCodeAndLogsOnEachWorker) {
  // No shared mount: the roots are under local_root, ~/.tpurun by default.
  EXPECT_THAT(error("{\"pods\": {\"sim\": {\"workers\": [\"a\"],\n \"local_root\": \"rel\"}}}"),
              HasSubstr("tpurun.json:2: pods.sim.local_root: must be an absolute path or start with ~/"));
  EXPECT_THAT(error("{\"pods\": {\"sim\": {\"workers\": [\"a\"], \"staging_root\": \"/s\",\n"
                    " \"logs_root\": \"/l\",\n \"local_root\": \"/x\"}}}"),
              HasSubstr("tpurun.json:3: pods.sim.local_root: \"local_root\" is for a pod with no shared mount"));
}

TEST_F(ConfigErrorsTest, BadPolicyListsTheChoices) {
  EXPECT_EQ(
      error(pod_with("      \"ssh\": {\"host_key_policy\": \"accept_new\"},\n")),
      "tpurun.json:4: pods.sim.ssh.host_key_policy: unknown policy 'accept_new' (did you mean "
      "'accept-new'?); use strict, accept-new or off");
  EXPECT_THAT(error(pod_with("      \"ssh\": {\"host_key_policy\": \"yes\"},\n")),
              HasSubstr("unknown policy 'yes'; use strict, accept-new or off"));
}

TEST_F(ConfigErrorsTest, TimeoutMustBePositive) {
  EXPECT_EQ(error(pod_with("      \"ssh\": {\"connect_timeout_s\": 0},\n")),
            "tpurun.json:4: pods.sim.ssh.connect_timeout_s: must be a positive number of seconds");
  EXPECT_THAT(error(pod_with("      \"ssh\": {\"connect_timeout_s\": -5},\n")),
              HasSubstr("must be a positive"));
  EXPECT_THAT(error(pod_with("      \"ssh\": {\"connect_timeout_s\": 99999999999},\n")),
              HasSubstr("at most 86400"));
}

TEST_F(ConfigErrorsTest, DefaultPodMustExist) {
  EXPECT_EQ(error("{\n\"default_pod\": \"simm\",\n\"pods\": {\"sim\": {\"workers\": [\"a\"], "
                  "\"staging_root\": \"/s\", "
                  "\"logs_root\": \"/l\"}}}"),
            "tpurun.json:2: default_pod: no pod named 'simm' (did you mean 'sim'?); pods: sim");
  EXPECT_THAT(error("{\"default_pod\": \"\", \"pods\": {\"sim\": {\"workers\": [\"a\"], "
                    "\"staging_root\": \"/s\", "
                    "\"logs_root\": \"/l\"}}}"),
              HasSubstr("default_pod: must not be empty"));
}

TEST_F(ConfigErrorsTest, RemoteDirectoriesMustBeAbsolute) {
  EXPECT_THAT(error("{\"pods\": {\"sim\": {\"workers\": [\"a\"], \"staging_root\": \"~/s\", "
                    "\"logs_root\": \"/l\"}}}"),
              HasSubstr("pods.sim.staging_root: must be an absolute path"));
  EXPECT_THAT(error("{\"pods\": {\"sim\": {\"workers\": [\"a\"], \"staging_root\": \"/s\", "
                    "\"logs_root\": \"\"}}}"),
              HasSubstr("pods.sim.logs_root: must not be empty"));
}

TEST_F(ConfigErrorsTest, DeviceGlobsMustBeAbsoluteAndNonEmpty) {
  EXPECT_THAT(error(pod_with("      \"device_globs\": [],\n")),
              HasSubstr("tpurun.json:4: pods.sim.device_globs: list at least one device pattern"));
  EXPECT_THAT(error(pod_with("      \"device_globs\": [\"accel*\"],\n")),
              HasSubstr("pods.sim.device_globs[0]: must be an absolute path pattern"));
}

TEST_F(ConfigErrorsTest, KnownHostsMustBeFileNames) {
  EXPECT_THAT(error(pod_with("      \"ssh\": {\"known_hosts\": []},\n")),
              HasSubstr("list at least one known_hosts file"));
  EXPECT_THAT(error(pod_with("      \"ssh\": {\"known_hosts\": 3},\n")),
              HasSubstr("pods.sim.ssh.known_hosts: expected a file name or an array of them"));
  EXPECT_THAT(error(pod_with("      \"ssh\": {\"known_hosts\": [\"\"]},\n")),
              HasSubstr("pods.sim.ssh.known_hosts[0]: must not be empty"));
}

TEST_F(ConfigErrorsTest, StageSizeLimitRejectsNonsense) {
  EXPECT_THAT(error(pod_with("      \"stage_size_limit\": \"lots\",\n")),
              HasSubstr("tpurun.json:4: pods.sim.stage_size_limit: expected a number of bytes or a "
                        "size such as"));
  EXPECT_THAT(error(pod_with("      \"stage_size_limit\": -1,\n")),
              HasSubstr("expected a number of bytes"));
  EXPECT_THAT(error(pod_with("      \"stage_size_limit\": 0,\n")), HasSubstr("must be positive"));
  EXPECT_THAT(error(pod_with("      \"stage_size_limit\": 1.5,\n")),
              HasSubstr("expected a number of bytes"));
}

TEST_F(ConfigErrorsTest, PodNamesAreRestricted) {
  EXPECT_THAT(error("{\"pods\": {\"my pod\": {}}}"),
              HasSubstr("pods.my pod: pod names may contain only"));
  EXPECT_THAT(error("{\"pods\": {\"-x\": {}}}"), HasSubstr("pod names may contain only"));
}

TEST_F(ConfigErrorsTest, SyntaxErrorsComeThroughWithColumn) {
  EXPECT_EQ(error("{\"pods\": {\n  \"sim\": {,}}}"),
            "tpurun.json:2:11: expected a string key or '}', found ','");
}

}  // namespace
}  // namespace tpurun

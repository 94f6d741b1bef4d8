// gcloud pods: which command tpurun runs, and how it reads the answer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/system_fakes.hpp"
#include "fakes/temp_dir.hpp"
#include "pod/gcloud_fixtures.hpp"
#include "tpurun/pod/config.hpp"
#include "tpurun/pod/describe_cache.hpp"
#include "tpurun/pod/tpu_node.hpp"

namespace tpurun {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace tpurun::testing;

std::vector<std::string> hosts(const std::vector<Worker>& workers) {
  std::vector<std::string> out;
  for (const auto& w : workers) out.push_back(w.host);
  return out;
}

std::string describe_error(const std::string& json, bool internal_ip) {
  try {
    parse_gcloud_describe(json, internal_ip);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GcloudDescribeTest, WorkersAreTheEndpointsInOrder) {
  // given a v4-32 whose internal IPs are not in sorted order
  std::vector<Worker> workers = parse_gcloud_describe(kDescribeV4_32, true);
  // then worker i is networkEndpoints[i], on the SSH port (not the endpoint's 8470)
  EXPECT_THAT(hosts(workers),
              ElementsAre("10.130.0.12", "10.130.0.9", "10.130.0.11", "10.130.0.10"));
  for (size_t i = 0; i < workers.size(); ++i) {
    EXPECT_EQ(workers[i].index, static_cast<int>(i));
    EXPECT_EQ(workers[i].port, 22);
  }
}

// gcloud files host keys under tpu.<node id>-<worker>[-...] (tpu-vm ssh's GetInstanceID).
TEST(GcloudDescribeTest, EachWorkerGetsGcloudsHostKeyAlias) {
  std::vector<Worker> workers = parse_gcloud_describe(kDescribeV4_32, true);
  ASSERT_EQ(workers.size(), 4u);
  EXPECT_EQ(workers[0].host_key_alias, "tpu.4311795032516739462-0");
  EXPECT_EQ(workers[3].host_key_alias, "tpu.4311795032516739462-3");
}

TEST(GcloudDescribeTest, ExternalIpsWhenAsked) {
  EXPECT_THAT(hosts(parse_gcloud_describe(kDescribeV4_32, false)),
              ElementsAre("35.186.10.1", "35.186.10.2", "35.186.10.3", "35.186.10.4"));
}

TEST(GcloudDescribeTest, CountsEndpointsNotTheAcceleratorName) {
  // given "v4-32" but a single endpoint, the endpoint count is what is real
  std::string one =
      R"({"acceleratorType": "v4-32", "networkEndpoints": [{"ipAddress": "10.0.0.1"}]})";
  EXPECT_EQ(parse_gcloud_describe(one, true).size(), 1u);
}

TEST(GcloudDescribeTest, MissingExternalIpExplainsInternalIps) {
  EXPECT_THAT(
      describe_error(kDescribeInternalOnly, false),
      HasSubstr("worker 0 has no external IP (networkEndpoints[0].accessConfig.externalIp)"));
  EXPECT_THAT(describe_error(kDescribeInternalOnly, false), HasSubstr("\"internal_ip\": true"));
  EXPECT_THAT(hosts(parse_gcloud_describe(kDescribeInternalOnly, true)), ElementsAre("10.0.0.2"));
}

TEST(GcloudDescribeTest, MissingInternalIpIsAnError) {
  EXPECT_EQ(
      describe_error(R"({"networkEndpoints": [{"ipAddress": "10.0.0.1"}, {"port": 8470}]})", true),
      "worker 1 has no internal IP (networkEndpoints[1].ipAddress)");
}

TEST(GcloudDescribeTest, NoEndpointsMentionsTheState) {
  EXPECT_EQ(describe_error(kDescribeCreating, true),
            "the TPU VM lists no network endpoints (state: CREATING)");
  EXPECT_EQ(describe_error(R"({"networkEndpoints": []})", true),
            "the TPU VM lists no network endpoints");
}

TEST(GcloudDescribeTest, MalformedOutputIsAnErrorNotACrash) {
  for (const char* bad :
       {"", "not json", "[]", "null", R"({"networkEndpoints": 3})", R"({"networkEndpoints": [3]})",
        R"({"networkEndpoints": [{"ipAddress": 3}]})",
        R"({"networkEndpoints": [{"accessConfig": 3}]})", R"({"state": 5})"}) {
    EXPECT_THROW(parse_gcloud_describe(bad, true), std::runtime_error) << bad;
    EXPECT_THROW(parse_gcloud_describe(bad, false), std::runtime_error) << bad;
  }
}

TEST(GcloudDescribeTest, CommandIncludesProjectOnlyWhenSet) {
  GcloudSpec spec{"kmh-tpuvm-v4-32-1", "us-central2-b", "", true};
  EXPECT_THAT(gcloud_describe_argv(spec),
              ElementsAre("gcloud", "compute", "tpus", "tpu-vm", "describe", "kmh-tpuvm-v4-32-1",
                          "--zone", "us-central2-b", "--format=json"));
  spec.project = "my-proj";
  EXPECT_THAT(gcloud_describe_argv(spec),
              ElementsAre("gcloud", "compute", "tpus", "tpu-vm", "describe", "kmh-tpuvm-v4-32-1",
                          "--zone", "us-central2-b", "--project", "my-proj", "--format=json"));
}

class GcloudPodLoadTest : public ::testing::Test {
 protected:
  GcloudPodLoadTest()
      : cwd_(temp_.path()),
        // describe's cache goes to the temp dir, never to a real ~/.cache: a test
        // that caches a description must not answer the next test's describe
        env_(std::map<std::string, std::string>{
            {"HOME", "/home/alice"}, {"USER", "alice"}, {"XDG_CACHE_HOME", temp_.path() + "/cache"}}) {
    temp_.write("tpurun.json", R"({
      // a v4-32 slice, described by gcloud on every run
      "pods": { "v4-32": {
        "gcloud": { "name": "kmh-tpuvm-v4-32-1", "zone": "us-central2-b", "project": "my-proj" },
        "staging_root": "/mnt/nfs/staging", "logs_root": "/mnt/nfs/logs" } } })");
  }

  // what() of the error load_pod throws; gcloud trouble is never a ConfigError,
  // whose "file:line" would send the user looking in the wrong place.
  std::string load_error() {
    try {
      load_pod({}, env_, runner_);
    } catch (const ConfigError& e) {
      return std::string("(ConfigError) ") + e.what();
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "(no error)";
  }

  TempDir temp_;
  ScopedChdir cwd_;
  FakeEnvironment env_;
  FakeProcessRunner runner_;
};

TEST_F(GcloudPodLoadTest, RunsDescribeAndUsesItsEndpoints) {
  // given gcloud answering with the v4-32 description
  runner_.next = {0, kDescribeV4_32, ""};
  // when the pod is loaded
  PodConfig pod = load_pod({}, env_, runner_);
  // then exactly one describe command ran, with the config's name, zone and project
  ASSERT_EQ(runner_.calls.size(), 1u);
  EXPECT_THAT(runner_.calls[0].argv,
              ElementsAre("gcloud", "compute", "tpus", "tpu-vm", "describe", "kmh-tpuvm-v4-32-1",
                          "--zone", "us-central2-b", "--project", "my-proj", "--format=json"));
  EXPECT_EQ(runner_.calls[0].stdin_data, "");
  // and the pod has the four workers, with gcloud's SSH defaults
  EXPECT_THAT(hosts(pod.workers),
              ElementsAre("10.130.0.12", "10.130.0.9", "10.130.0.11", "10.130.0.10"));
  EXPECT_EQ(pod.ssh.identity_file, "/home/alice/.ssh/google_compute_engine");
  EXPECT_FALSE(pod.local);
}

TEST_F(GcloudPodLoadTest, FailingGcloudShowsItsOwnStderr) {
  // given gcloud failing the way it does without permission
  runner_.next = {1, "",
                  "ERROR: (gcloud.compute.tpus.tpu-vm.describe) PERMISSION_DENIED: Permission 'tpu.nodes.get' "
                  "denied on 'projects/my-proj/locations/us-central2-b/nodes/kmh-tpuvm-v4-32-1'\n"};
  // then the error names the pod and command, and carries gcloud's message verbatim
  EXPECT_EQ(load_error(),
            "pod 'v4-32': `gcloud compute tpus tpu-vm describe kmh-tpuvm-v4-32-1 --zone us-central2-b --project "
            "my-proj --format=json` failed (exit 1):\nERROR: (gcloud.compute.tpus.tpu-vm.describe) "
            "PERMISSION_DENIED: Permission 'tpu.nodes.get' denied on "
            "'projects/my-proj/locations/us-central2-b/nodes/kmh-tpuvm-v4-32-1'");
}

TEST_F(GcloudPodLoadTest, AGcloudThatNeverAnswersIsGivenUpWithTheCommand) {
  // given a describe the runner gave up on (SystemProcessRunner::run_bounded)
  runner_.next = {124, "", "tpurun: gave up after 120s\n", true};
  EXPECT_EQ(load_error(),
            "pod 'v4-32': `gcloud compute tpus tpu-vm describe kmh-tpuvm-v4-32-1 --zone us-central2-b --project "
            "my-proj --format=json` gave no answer in 120s: is the Cloud TPU API reachable from here? (run it by "
            "hand to see what it waits for)");
}

TEST_F(GcloudPodLoadTest, MissingGcloudSuggestsInstallingIt) {
  runner_.next = {127, "", "tpurun: cannot run gcloud: No such file or directory\n"};
  EXPECT_EQ(load_error(),
            "pod 'v4-32': cannot run gcloud; is the Google Cloud SDK installed and on PATH? "
            "tpurun: cannot run gcloud: No such file or directory");
}

TEST_F(GcloudPodLoadTest, ATpuVmThatIsNotReadySaysWhatGcloudReported) {
  runner_.next = {0, kDescribeCreating, ""};
  EXPECT_EQ(load_error(),
            "pod 'v4-32': TPU VM kmh-tpuvm-v4-32-1 is CREATING, not READY: wait until it is (`tpurun status` "
            "shows its state)");
}

TEST_F(GcloudPodLoadTest, ADeletedTpuVmIsNamedAsSuch) {
  runner_.next = {1, "", "ERROR: (gcloud.compute.tpus.tpu-vm.describe) NOT_FOUND: Resource "
                         "'projects/my-proj/locations/us-central2-b/nodes/kmh-tpuvm-v4-32-1' was not found\n"};
  EXPECT_THAT(load_error(), HasSubstr("pod 'v4-32': TPU VM kmh-tpuvm-v4-32-1 was not found in zone us-central2-b "
                                      "of project my-proj: it was deleted"));
}

// gcloud with the TPU VM in one zone only: NOT_FOUND anywhere else.
class OneZoneGcloud : public FakeProcessRunner {
 public:
  explicit OneZoneGcloud(std::string zone) : zone_(std::move(zone)) {}
  ProcessResult run(const std::vector<std::string>& argv, const std::string& stdin_data,
                    const std::optional<std::string>& cwd) override {
    FakeProcessRunner::run(argv, stdin_data, cwd);
    for (size_t i = 0; i + 1 < argv.size(); ++i) {
      if (argv[i] == "--zone" && argv[i + 1] == zone_) return {0, kDescribeV4_32, ""};
    }
    return {1, "", "ERROR: (gcloud.compute.tpus.tpu-vm.describe) NOT_FOUND: Resource 'x' was not found\n"};
  }

 private:
  std::string zone_;
};

TEST_F(GcloudPodLoadTest, ASharedConfigFindsTheVmInAnotherOfItsCreateZones) {
  // given a pod whose "create" zones are two, and its VM (another user's up made it) in the second
  temp_.write("tpurun.json", R"({ "pods": { "v4-32": {
        "gcloud": { "name": "kmh-tpuvm-v4-32-1", "zone": "us-central2-b", "project": "my-proj" },
        "create": { "accelerator_type": "v4-32", "runtime_version": "b", "zones": ["us-central2-b", "us-east1-d"] },
        "staging_root": "/mnt/nfs/staging", "logs_root": "/mnt/nfs/logs" } } })");
  OneZoneGcloud gcloud("us-east1-d");
  // when the pod is loaded (no placement of this user's says where)
  PodConfig pod = load_pod({}, env_, gcloud);
  // then the config's zone is asked first, then the next: found there (issue 39, finding 8)
  ASSERT_EQ(gcloud.calls.size(), 2u);
  EXPECT_EQ(pod.gcloud->zone, "us-east1-d");
  EXPECT_EQ(pod.workers.size(), 4u);
  // and the next load reads the kept answer of that zone: no gcloud call
  OneZoneGcloud again("us-east1-d");
  EXPECT_EQ(load_pod({}, env_, again).gcloud->zone, "us-east1-d");
  EXPECT_TRUE(again.calls.empty());
  // and in no zone at all: the first zone's "not found"
  OneZoneGcloud nowhere("europe-west4-a");
  forget_describe(GcloudSpec{"kmh-tpuvm-v4-32-1", "us-east1-d", "my-proj", true}, env_);
  try {
    load_pod({}, env_, nowhere);
    FAIL() << "no error";
  } catch (const TpuUnavailable& e) {
    EXPECT_THAT(e.what(), HasSubstr("was not found in zone us-central2-b"));
  }
  EXPECT_EQ(nowhere.calls.size(), 2u);
}

TEST_F(GcloudPodLoadTest, ReadingCommandsDoNotDescribe) {
  PodRequest request;
  request.need_workers = false;
  PodConfig pod = load_pod(request, env_, runner_);
  EXPECT_TRUE(runner_.calls.empty());
  EXPECT_TRUE(pod.workers.empty());
  EXPECT_EQ(pod.logs_root, "/mnt/nfs/logs");
}

TEST_F(GcloudPodLoadTest, OverridesApplyAfterDescribe) {
  runner_.next = {0, kDescribeV4_32, ""};
  PodRequest request;
  request.overrides.identity_file = "/keys/tpu";
  request.overrides.host_key_policy = HostKeyPolicy::strict;
  PodConfig pod = load_pod(request, env_, runner_);
  EXPECT_EQ(pod.ssh.identity_file, "/keys/tpu");
  EXPECT_EQ(pod.ssh.host_key_policy, HostKeyPolicy::strict);
  EXPECT_EQ(pod.workers.size(), 4u);
}

}  // namespace
}  // namespace tpurun

namespace tpurun {
namespace {

using ::testing::HasSubstr;

// hostkeys --import and the first-use offer: gcloud's own tpu-vm ssh, through
// the same addresses the pod uses (issue: --internal-ip was left out, so it
// failed on internal-only TPU VMs).
TEST(GcloudImportTest, RunsTpuVmSshOnTheSelectedWorkersThroughThePodsAddresses) {
  GcloudSpec spec{"v4-32", "us-central2-b", "", false};
  EXPECT_EQ(gcloud_import_argv(spec, "all"),
            (std::vector<std::string>{"gcloud", "compute", "tpus", "tpu-vm", "ssh", "v4-32", "--zone", "us-central2-b",
                                      "--worker=all", "--command=true"}));
  spec.project = "p";
  spec.internal_ip = true;
  EXPECT_EQ(gcloud_import_argv(spec, "0-3"),
            (std::vector<std::string>{"gcloud", "compute", "tpus", "tpu-vm", "ssh", "v4-32", "--zone", "us-central2-b",
                                      "--project", "p", "--internal-ip", "--worker=0-3", "--command=true"}));
}

TEST(TpuNodeTest, StateHealthAndWorkersOfANodeThatIsNotReady) {
  TpuNode node = parse_tpu_node(R"({"name": "projects/p/locations/z/nodes/t1", "id": "42", "state": "PREEMPTED",
                                    "health": "UNHEALTHY_MAINTENANCE", "healthDescription": "host maintenance",
                                    "acceleratorType": "v4-8"})",
                                true);
  EXPECT_EQ(node.name, "t1");
  EXPECT_FALSE(node.ready());
  EXPECT_TRUE(node.workers.empty());
  EXPECT_EQ(node.endpoint_error, "the TPU VM lists no network endpoints (state: PREEMPTED)");
  EXPECT_EQ(node_state_text(node), "PREEMPTED (health UNHEALTHY_MAINTENANCE: host maintenance)");
  TpuUnavailable gone("v4-8", GcloudSpec{"t1", "z", "p", true}, node);
  EXPECT_THAT(gone.what(), HasSubstr("pod 'v4-8': TPU VM t1 is PREEMPTED"));
  EXPECT_THAT(gone.what(), HasSubstr("gcloud compute tpus tpu-vm delete t1 --zone z --project p"));
  node.state = "STOPPED";
  EXPECT_THAT(TpuUnavailable("v4-8", GcloudSpec{"t1", "z", "", true}, node).what(),
              HasSubstr("start it with `gcloud compute tpus tpu-vm start t1 --zone z`"));
  node.state = "NOT_FOUND";
  EXPECT_THAT(TpuUnavailable("v4-8", GcloudSpec{"t1", "z", "", true}, node).what(),
              HasSubstr("TPU VM t1 was not found in zone z: it was deleted"));
}

}  // namespace
}  // namespace tpurun

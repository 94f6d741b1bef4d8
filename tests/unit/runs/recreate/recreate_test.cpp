// stage --recreate: the safety rules, and the recreate's steps on fakes
// (gcloud answers scripted per command, workers answered by a function).
#include "runs/recreate/recreate.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <deque>
#include <fstream>

#include "fakes/temp_dir.hpp"
#include "runs/record/log_dir_layout.hpp"
#include "tpu/scan_fixtures.hpp"
#include "tpu/scripted_transport.hpp"
#include "tpurun/util/atomic_file.hpp"

namespace tpurun {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

RecreateFacts preempted_facts() {
  RecreateFacts f;
  f.state = "PREEMPTED";
  f.name = "rc";
  f.id = "111";
  f.pod_tpu = "rc";
  f.recorded_id = "111";
  return f;
}

TEST(RecreateRules, APreemptedVmOfThisRunMayBeRecreated) {
  EXPECT_EQ(recreate_refusal(preempted_facts()), std::nullopt);
  RecreateFacts terminated = preempted_facts();
  terminated.state = "TERMINATED";
  EXPECT_EQ(recreate_refusal(terminated), std::nullopt);
  // A deleted one has no id left to compare: it is created again.
  RecreateFacts deleted = preempted_facts();
  deleted.state = "NOT_FOUND";
  deleted.name = deleted.id = "";
  EXPECT_EQ(recreate_refusal(deleted), std::nullopt);
}

TEST(RecreateRules, EachSafetyRuleRefusesAndSaysWhy) {
  auto refusal = [](auto change) {
    RecreateFacts f = preempted_facts();
    change(f);
    return recreate_refusal(f).value_or("(allowed)");
  };
  EXPECT_THAT(refusal([](RecreateFacts& f) { f.state = "READY"; }), HasSubstr("TPU VM rc is READY now"));
  EXPECT_THAT(refusal([](RecreateFacts& f) { f.state = "STOPPED"; }), HasSubstr("deletes nothing else"));
  EXPECT_THAT(refusal([](RecreateFacts& f) { f.name = "other"; }), HasSubstr("not the pod's 'rc'"));
  EXPECT_THAT(refusal([](RecreateFacts& f) { f.id = "222"; }),
              HasSubstr("has id 222, not 111 that this run was on"));
  EXPECT_THAT(refusal([](RecreateFacts& f) { f.run_active = false; }), HasSubstr("the run was stopped"));
  EXPECT_THAT(refusal([](RecreateFacts& f) { f.claimed_by = "bob, 1h left"; }),
              HasSubstr("the pod is claimed by bob, 1h left"));
  EXPECT_THAT(refusal([](RecreateFacts& f) { f.foreign_tpu_users = {"w1 (bob pid 42)"}; }),
              HasSubstr("another user holds a TPU on the pod's workers: w1 (bob pid 42)"));
  EXPECT_THAT(refusal([](RecreateFacts& f) { f.not_recreatable = "it was made by the queued resource q"; }),
              HasSubstr("cannot be created again by tpurun: it was made by the queued resource q"));
}

// gcloud, scripted: each call gets the next answer for its verb.
class ScriptedGcloud : public ProcessRunner {
 public:
  std::map<std::string, std::deque<ProcessResult>> answers;  // by verb: describe, delete, create, ssh
  std::vector<std::vector<std::string>> calls;

  ProcessResult run(const std::vector<std::string>& argv, const std::string&,
                    const std::optional<std::string>&) override {
    calls.push_back(argv);
    auto& queue = answers[argv.at(4)];
    if (queue.empty()) return {1, "", "ERROR: unexpected call"};
    ProcessResult r = queue.front();
    if (queue.size() > 1) queue.pop_front();
    return r;
  }
  // run_bounded as the real runner does it, minus the waiting: an answer
  // marked timed_out stands for a gcloud that never returned.
  ProcessResult run_bounded(const std::vector<std::string>& argv, std::chrono::seconds limit,
                            const CancelToken&) override {
    limits.push_back(limit);
    return run(argv, "", std::nullopt);
  }
  std::vector<std::chrono::seconds> limits;
  std::vector<std::string> verbs() const {
    std::vector<std::string> out;
    for (const auto& c : calls) out.push_back(c.at(4));
    return out;
  }
};

std::string node_json(const std::string& state, const std::string& id) {
  return R"({"name": "projects/p/locations/z/nodes/rc", "id": ")" + id + R"(", "state": ")" + state +
         R"(", "acceleratorType": "v4-16", "runtimeVersion": "rt", "schedulingConfig": {"spot": true},
            "metadata": {"startup-script": "echo hi"},
            "networkEndpoints": [{"ipAddress": "10.0.0.1"}, {"ipAddress": "10.0.0.2"}]})";
}

// A worker that answers the scan as root: nobody holds its TPU. The setup
// script prints a line.
testing::ScriptedReply worker(int w, const RemoteCommand& command) {
  if (command.command_line == "exec bash -s") return {"mounted on w" + std::to_string(w) + "\n", "", 0};
  return {"TPURUN-SCAN 1\ncaller 1001 alice\npriv root\nself 10\nlock 0\nlogs 0\nbegin pinfo\nend pinfo\n"
          "begin runid\nend runid\ndenied 0\nend\n",
          "", 0};
}

// The same workers, but w1's setup answers `reply`.
testing::ScriptedTransport::Responder setup_fails_on_w1(testing::ScriptedReply reply) {
  return [reply](int w, const RemoteCommand& c) {
    if (c.command_line == "exec bash -s" && w == 1) return reply;
    return worker(w, c);
  };
}

struct RecreateFixture : ::testing::Test {
  testing::TempDir dir;
  std::string log_dir = dir.path() + "/run";
  ScriptedGcloud gcloud;
  testing::ScriptedTransport transport{worker};
  CancelToken cancel;
  std::vector<std::string> said;
  bool stopped = false;
  RecreateJob job;

  void SetUp() override {
    std::filesystem::create_directories(tpu_vm_dir(log_dir));
    std::filesystem::create_directories(dir.path() + "/logs");
    write_file_atomic(recorded_tpu_vm_path(log_dir), node_json("READY", "111"));
    write_file_atomic(recorded_setup_path(log_dir), "mount /nfs\n");
    job.run_id = "RUN";
    job.log_dir = log_dir;
    job.user = "alice";
    job.pod = "rc";
    job.logs_root = dir.path() + "/logs";
    job.spec = GcloudSpec{"rc", "z", "p", true};
    job.recorded_id = "111";
    job.workers = {{0, "10.0.0.1", 22}, {1, "10.0.0.2", 22}};
    job.audit_path = dir.path() + "/state/tpurun/audit.jsonl";
    job.poll = std::chrono::milliseconds(1);
    gcloud.answers["describe"] = {{0, node_json("PREEMPTED", "111"), ""}, {0, node_json("CREATING", "222"), ""},
                                  {0, node_json("READY", "222"), ""}};
    gcloud.answers["delete"] = {{0, "", "Deleted tpu [rc]."}};
    gcloud.answers["create"] = {{0, "", "Create request issued for: [rc]"}};
    gcloud.answers["ssh"] = {{0, "", ""}};
  }

  RecreateResult recreate() { return recreate_on(transport, [this] { return stopped; }); }
  // The VM found PREEMPTED (id 111) recreated, its workers answered by `workers`.
  RecreateResult recreate_on(Transport& workers, std::function<bool()> is_stopped = [] { return false; }) {
    TpuNode gone;
    gone.name = "rc";
    gone.id = "111";
    gone.state = "PREEMPTED";
    RecreateIo io{gcloud, workers, cancel, [this](const std::string& s) { said.push_back(s); }, std::move(is_stopped)};
    return recreate_tpu_vm(job, gone, io);
  }
};

TEST_F(RecreateFixture, DeletesCreatesWaitsForReadyPushesKeysAndRunsTheSetup) {
  const RecreateResult r = recreate();
  ASSERT_TRUE(r.ok) << r.why;
  // describe again right before the delete; then describe until READY
  EXPECT_THAT(gcloud.verbs(), ElementsAre("describe", "delete", "create", "describe", "describe", "ssh"));
  EXPECT_EQ(gcloud.calls[2].back(), "--quiet");
  EXPECT_EQ(r.node->id, "222");
  // the run is on the new VM from now on
  EXPECT_THAT(read_small_file(recorded_tpu_vm_path(log_dir)), HasSubstr(R"("id": "222")"));
  EXPECT_EQ(read_small_file(metadata_dir(log_dir) + "/startup-script"), "echo hi");
  EXPECT_THAT(said, ::testing::Contains("TPU VM rc is CREATING"));
  // the setup ran on both new workers, and its output is kept
  const std::string setup_log = read_small_file(setup_log_path(log_dir));
  EXPECT_THAT(setup_log, HasSubstr("[w0 10.0.0.1] mounted on w0"));
  EXPECT_THAT(setup_log, HasSubstr("[w1 10.0.0.2] exit 0"));
  // every delete and create is in the audit log, with the user's name
  const std::string audit = read_small_file(job.audit_path);
  EXPECT_THAT(audit, HasSubstr(R"("event":"tpu-vm-delete","caller":"alice","pod":"rc","tpu":"rc")"));
  EXPECT_THAT(audit, HasSubstr(R"("node_id":"111","run_id":"RUN")"));
  EXPECT_THAT(audit, HasSubstr(R"("event":"tpu-vm-create")"));
}

TEST_F(RecreateFixture, AVmThatCameBackMeanwhileIsNotDeleted) {
  // someone else recreated it between the first look and the delete
  gcloud.answers["describe"] = {{0, node_json("READY", "333"), ""}};
  const RecreateResult r = recreate();
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.why, HasSubstr("TPU VM rc is READY now"));
  EXPECT_THAT(gcloud.verbs(), ElementsAre("describe"));
  EXPECT_FALSE(std::filesystem::exists(job.audit_path));
}

TEST_F(RecreateFixture, AnotherUsersTpuProcessOnAReachableWorkerStopsEverything) {
  testing::ScriptedTransport busy([](int w, const RemoteCommand& c) {
    testing::ScriptedReply r = worker(w, c);
    if (w == 1) {
      r.out = testing::kBobHoldsEverything;
    }
    return r;
  });
  const RecreateResult r = recreate_on(busy);
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.why, HasSubstr("another user holds a TPU"));
  EXPECT_TRUE(gcloud.calls.empty());
}

TEST_F(RecreateFixture, AFailedDeleteCreatesNothing) {
  gcloud.answers["delete"] = {{1, "", "ERROR: (gcloud.compute.tpus.tpu-vm.delete) PERMISSION_DENIED: no"}};
  const RecreateResult r = recreate();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.why, "gcloud could not delete it: exit 1: ERROR: (gcloud.compute.tpus.tpu-vm.delete) "
                   "PERMISSION_DENIED: no");
  EXPECT_THAT(gcloud.verbs(), ElementsAre("describe", "delete"));
}

TEST_F(RecreateFixture, AGcloudThatNeverAnswersIsGivenUpAndNothingMoreIsDone) {
  ProcessResult hung{124, "", "tpurun: gave up after 600s\n"};
  hung.timed_out = true;
  gcloud.answers["delete"] = {hung};
  const RecreateResult r = recreate();
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.why, HasSubstr("gcloud could not delete it: exit 124: no answer in 600s, gave up (the TPU VM is "
                               "left as it is: gcloud compute tpus tpu-vm describe rc --zone"));
  EXPECT_THAT(gcloud.verbs(), ElementsAre("describe", "delete"));
  using std::chrono::seconds;
  EXPECT_EQ(gcloud.limits, (std::vector<seconds>{seconds(120), seconds(600)}));  // describe, delete
}

TEST_F(RecreateFixture, EachGcloudChangeHasATimeLimit) {
  ASSERT_TRUE(recreate().ok);
  // every call: describe and delete, create (as long as a create may take),
  // describes until READY, the key push
  using std::chrono::seconds;
  EXPECT_EQ(gcloud.limits, (std::vector<seconds>{seconds(120), seconds(600), seconds(1800), seconds(120),
                                                  seconds(120), seconds(600)}));
}

TEST_F(RecreateFixture, NoAuditRecordNoDelete) {
  job.audit_path = "relative/audit.jsonl";
  const RecreateResult r = recreate();
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.why, HasSubstr("without a record, nothing is done"));
  EXPECT_THAT(gcloud.verbs(), ElementsAre("describe"));
}

TEST_F(RecreateFixture, AFailingSetupEndsTheRecreateAndNamesTheWorker) {
  testing::ScriptedTransport failing(setup_fails_on_w1({"", "mount: permission denied\n", 32}));
  const RecreateResult r = recreate_on(failing);
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.why, HasSubstr("the setup failed: w1"));
  EXPECT_THAT(read_small_file(setup_log_path(log_dir)), HasSubstr("[w1 10.0.0.2] mount: permission denied"));
}

// Issue 39, findings 9 and 10: kill --run or `tpurun down` while the new VM
// is being made: the recreate stops, and what it created goes again.
TEST_F(RecreateFixture, StoppedWhileTheNewVmIsMadeDeletesWhatItCreated) {
  const RecreateResult r = recreate_on(transport, [this] { return gcloud.calls.size() >= 3; });
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.why, HasSubstr("stopped while TPU VM rc was being created; what it created is deleted"));
  EXPECT_THAT(gcloud.verbs(), ElementsAre("describe", "delete", "create", "delete"));
  EXPECT_THAT(said, ::testing::Contains(HasSubstr("deleting what this recreate created: gcloud compute tpus tpu-vm "
                                                  "delete rc")));
  // audited as every delete is: the preempted VM's, then the one it created
  const std::string audit = read_small_file(job.audit_path);
  EXPECT_NE(audit.find(R"("event":"tpu-vm-delete")", audit.find(R"("event":"tpu-vm-create")")), std::string::npos);
}

TEST_F(RecreateFixture, StoppedBeforeTheCreateCreatesNothing) {
  const RecreateResult r = recreate_on(transport, [this] { return gcloud.calls.size() >= 2; });
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(gcloud.verbs(), ElementsAre("describe", "delete"));
}

// Issue 39, finding 11: the new VM preempted during the setup is a preemption, for the caller to count.
TEST_F(RecreateFixture, TheNewVmPreemptedDuringTheSetupIsSaidSo) {
  gcloud.answers["describe"] = {{0, node_json("PREEMPTED", "111"), ""},
                                {0, node_json("CREATING", "222"), ""},
                                {0, node_json("READY", "222"), ""},
                                {0, node_json("PREEMPTED", "222"), ""}};
  testing::ScriptedTransport lost(setup_fails_on_w1({"", "connection lost\n", 255}));
  const RecreateResult r = recreate_on(lost);
  EXPECT_FALSE(r.ok);
  ASSERT_TRUE(r.preempted_again);
  EXPECT_EQ(r.preempted_again->id, "222");
  EXPECT_THAT(r.why, HasSubstr("TPU VM rc is PREEMPTED during the recreate's setup (the setup failed: w1"));
  // nothing of it is deleted here: the next recreate does that, within the budget
  EXPECT_THAT(gcloud.verbs(), ElementsAre("describe", "delete", "create", "describe", "describe", "ssh", "describe"));
}

TEST_F(RecreateFixture, AFailingSetupOnAVmStillReadyIsNoPreemption) {
  testing::ScriptedTransport failing(setup_fails_on_w1({"", "mount: permission denied\n", 32}));
  const RecreateResult r = recreate_on(failing);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.preempted_again);
}

// Issue 39, item 17: gcloud's whole error, not its last line (which hid ALREADY_EXISTS).
TEST_F(RecreateFixture, ACreateErrorSaysGcloudsWholeReason) {
  gcloud.answers["create"] = {{1, "",
                               "ERROR: (gcloud.compute.tpus.tpu-vm.create) ALREADY_EXISTS: Resource "
                               "'projects/p/locations/z/nodes/rc' already exists\n"
                               "- '@type': type.googleapis.com/google.rpc.ResourceInfo\n"
                               "  resourceName: projects/p/locations/z/nodes/rc\n"}};
  const RecreateResult r = recreate();
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.why, HasSubstr("gcloud could not create it: exit 1: ERROR: (gcloud.compute.tpus.tpu-vm.create) "
                               "ALREADY_EXISTS: Resource 'projects/p/locations/z/nodes/rc' already exists - "
                               "'@type': type.googleapis.com/google.rpc.ResourceInfo resourceName: "));
  // refused, not made: nothing of it is deleted
  EXPECT_THAT(gcloud.verbs(), ElementsAre("describe", "delete", "create"));
}

TEST(RecreateCommands, DeleteCreateAndKeysInOrder) {
  const auto commands = recreate_commands(GcloudSpec{"rc", "z", "", false}, node_json("READY", "1"), "/logs/RUN");
  ASSERT_EQ(commands.size(), 3u);
  EXPECT_EQ(commands[0].at(4), "delete");
  EXPECT_EQ(commands[1].at(4), "create");
  EXPECT_THAT(commands[1], ::testing::Contains("--metadata-from-file=startup-script=/logs/RUN/tpu-vm/metadata/startup-script"));
  EXPECT_THAT(commands[2], ElementsAre("gcloud", "compute", "tpus", "tpu-vm", "ssh", "rc", "--zone", "z", "--worker=all",
                                       "--quiet", "--command=true"));
}

}  // namespace
}  // namespace tpurun

// provision: zone after zone, on a runner that plays gcloud from a script.
#include "cloud/provision.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "fakes/temp_dir.hpp"
#include "pod/gcloud_fixtures.hpp"
#include "tpurun/transport/shell_quote.hpp"

namespace tpurun {
namespace {

// Answers by what gcloud was asked (verb and zone), in order per key.
class ScriptedGcloud : public ProcessRunner {
 public:
  ProcessResult run(const std::vector<std::string>& argv, const std::string&,
                    const std::optional<std::string>&) override {
    calls.push_back(shell_display(argv));
    std::string key = argv.size() > 4 ? argv[3] + " " + argv[4] : argv[0];
    for (size_t i = 0; i + 1 < argv.size(); ++i) {
      if (argv[i] == "--zone") key += " " + argv[i + 1];
    }
    auto& queue = answers[key];
    if (queue.empty()) return ProcessResult{1, "", "ERROR: (gcloud) NOT_FOUND: Resource was not found\n"};
    ProcessResult r = queue.front();
    if (queue.size() > 1) queue.erase(queue.begin());
    return r;
  }
  std::map<std::string, std::vector<ProcessResult>> answers;
  std::vector<std::string> calls;
};

ProcessResult ok(const std::string& out = "") { return ProcessResult{0, out, ""}; }
ProcessResult qr(const std::string& state, const std::string& error = "") {
  std::string failed = error.empty() ? "" : R"(, "failedData": {"error": {"code": 8, "message": ")" + error + R"("}})";
  return ok(R"({"name": "projects/p/locations/z/queuedResources/tpu", "state": {"state": ")" + state + "\"" + failed + "}}");
}

// A queued resource labelled for `owner` (tpurun-user), as up's create labels it.
ProcessResult labelled_qr(const std::string& state, const std::string& owner) {
  return ok(R"({"name": "projects/p/locations/z1/queuedResources/tpu", "state": {"state": ")" + state +
            R"("}, "tpu": {"nodeSpec": [{"nodeId": "tpu", "node": {"labels": {"tpurun-user": ")" + owner + R"("}}}]}})");
}

bool ran(const std::vector<std::string>& calls, const std::string& verb) {
  for (const auto& c : calls) {
    if (c.find(verb) != std::string::npos) return true;
  }
  return false;
}

class ProvisionTest : public ::testing::Test {
 protected:
  ProvisionTest() {
    job_.pod = "p";
    job_.gcloud = GcloudSpec{"tpu", "z1", "proj", true};
    job_.create.accelerator_type = "v4-32";
    job_.create.runtime_version = "tpu-ubuntu2204-base";
    job_.create.zones = {"z1", "z2"};
    job_.metadata_dir = dir_.path() + "/metadata";
    job_.poll = std::chrono::milliseconds(1);
    job_.retry_first = std::chrono::milliseconds(1);
  }
  ProvisionResult run() {
    ProvisionIo io{calls_, cancel_, [&](const std::string& line) { said_.push_back(line); }, [](const std::string&) {}};
    return provision(job_, io);
  }
  bool said(const std::string& text) const {
    for (const auto& line : said_) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }

  testing::TempDir dir_;
  ScriptedGcloud gcloud_;
  GcloudCalls calls_{gcloud_, "", "alice", "p"};
  CancelToken cancel_;
  ProvisionJob job_;
  std::vector<std::string> said_;
};

TEST_F(ProvisionTest, AFailedQueuedResourceIsDeletedAndTheNextZoneTried) {
  // given: z1's queued resource goes FAILED; z2's becomes ACTIVE with a READY node
  gcloud_.answers["queued-resources describe z1"] = {{1, "", "NOT_FOUND: not found"}, qr("WAITING_FOR_RESOURCES"),
                                                      qr("FAILED", "no more capacity")};
  gcloud_.answers["queued-resources create z1"] = {ok()};
  gcloud_.answers["queued-resources delete z1"] = {ok()};
  gcloud_.answers["queued-resources describe z2"] = {{1, "", "NOT_FOUND: not found"}, qr("ACTIVE")};
  gcloud_.answers["queued-resources create z2"] = {ok()};
  gcloud_.answers["tpu-vm describe z2"] = {ok(testing::kDescribeV4_32)};
  // when
  const ProvisionResult r = run();
  // then: the node in z2, z1's queued resource deleted with --force, and said why
  ASSERT_TRUE(r.node.has_value()) << r.why;
  EXPECT_EQ(r.where.zone, "z2");
  EXPECT_EQ(r.queued_resource, "tpu");
  ASSERT_TRUE(r.made.has_value());
  EXPECT_EQ(r.made->where.zone, "z2");
  EXPECT_TRUE(said("queued resource tpu is FAILED: no more capacity (code 8): deleting it (--force)"));
  EXPECT_TRUE(said("trying z2"));
  // The reason once, not again with "trying z2" (issue 39, finding 17).
  int with_reason = 0;
  for (const auto& line : said_) with_reason += line.find("no more capacity (code 8)") != std::string::npos;
  EXPECT_EQ(with_reason, 1);
  bool deleted = false;
  for (const auto& c : gcloud_.calls) {
    deleted |= c == "gcloud compute tpus queued-resources delete tpu --zone z1 --project proj --force --quiet";
  }
  EXPECT_TRUE(deleted);
}

TEST_F(ProvisionTest, PlainCreateMovesOnOnCode8AndStopsOnQuota) {
  // given: plain creates; z1 has no capacity, z2 is over quota
  job_.create.queued = false;
  gcloud_.answers["tpu-vm create z1"] = {{1, "", "ERROR: (gcloud.compute.tpus.tpu-vm.create) {\n  \"code\": 8,\n  "
                                                  "\"message\": \"There is no more capacity in the zone\"\n}\n"}};
  gcloud_.answers["tpu-vm create z2"] = {{1, "", "ERROR: Quota 'TPUV4_PODSLICE' exceeded. Limit: 32\n"}};
  // when
  const ProvisionResult r = run();
  // then: z1 said and skipped, z2's quota stops with a fix
  EXPECT_FALSE(r.node.has_value());
  EXPECT_TRUE(said("There is no more capacity in the zone\" }; trying z2")) << said_.front();
  EXPECT_NE(r.why.find("Quota 'TPUV4_PODSLICE' exceeded"), std::string::npos) << r.why;
  EXPECT_NE(r.fix.find("quota"), std::string::npos);
  EXPECT_FALSE(r.made.has_value());
}

TEST_F(ProvisionTest, ACancelLeavesWhatWasMadeForTheCaller) {
  // given: Ctrl-C while the queued resource waits
  std::atomic<bool> flag{true};
  cancel_ = CancelToken(&flag);
  gcloud_.answers["queued-resources describe z1"] = {{1, "", "NOT_FOUND: not found"}};
  gcloud_.answers["queued-resources create z1"] = {ok()};
  // when
  const ProvisionResult r = run();
  // then: cancelled; the caller deletes what `made` names
  EXPECT_TRUE(r.cancelled);
  ASSERT_TRUE(r.made.has_value());
  EXPECT_TRUE(r.made->queued);
}

TEST_F(ProvisionTest, AnotherUsersWaitingQueuedResourceIsNamedNeverWaitedOnNorDeleted) {
  // given: bob's up; alice's queued resource waits in z1 (issue 39, finding 1)
  job_.labels = {{"tpurun-user", "bob"}};
  gcloud_.answers["queued-resources describe z1"] = {labelled_qr("WAITING_FOR_RESOURCES", "alice")};
  // when
  const ProvisionResult r = run();
  // then: stopped, naming alice; nothing created, deleted, or claimed as made
  EXPECT_FALSE(r.node.has_value());
  EXPECT_FALSE(r.made.has_value());
  EXPECT_NE(r.why.find("alice's"), std::string::npos) << r.why;
  EXPECT_NE(r.fix.find("ask alice"), std::string::npos) << r.fix;
  EXPECT_FALSE(ran(gcloud_.calls, "delete"));
  EXPECT_FALSE(ran(gcloud_.calls, "create"));
  EXPECT_FALSE(ran(gcloud_.calls, "z2"));  // no second VM of that name elsewhere
}

TEST_F(ProvisionTest, YourOwnFoundQueuedResourceIsWaitedOnButIsNotThisUpsToDelete) {
  // given: alice's earlier `up --keep` left one waiting; it becomes ACTIVE
  job_.labels = {{"tpurun-user", "alice"}};
  gcloud_.answers["queued-resources describe z1"] = {labelled_qr("WAITING_FOR_RESOURCES", "alice"),
                                                      labelled_qr("ACTIVE", "alice")};
  gcloud_.answers["tpu-vm describe z1"] = {ok(testing::kDescribeV4_32)};
  // when
  const ProvisionResult r = run();
  // then: its node, and nothing marked as made (a failure later would not delete it)
  ASSERT_TRUE(r.node.has_value()) << r.why;
  EXPECT_FALSE(r.made.has_value());
  EXPECT_TRUE(said("waiting on it (this up did not make it, and will not delete it)"));
}

TEST_F(ProvisionTest, ACreateThatFailedWith429ButWasMadeIsDescribedAndKeptAsMade) {
  // given: gcloud's create fails on a 429, but the API made the queued resource (issue 39, finding 3)
  job_.labels = {{"tpurun-user", "alice"}};
  gcloud_.answers["queued-resources describe z1"] = {{1, "", "NOT_FOUND: not found"},
                                                      labelled_qr("WAITING_FOR_RESOURCES", "alice"),
                                                      labelled_qr("ACTIVE", "alice")};
  gcloud_.answers["queued-resources create z1"] = {
      {1, "", "ERROR: (gcloud.compute.tpus.queued-resources.create) HTTPError 429: Quota exceeded for quota metric "
              "'Read requests'\n"}};
  gcloud_.answers["tpu-vm describe z1"] = {ok(testing::kDescribeV4_32)};
  // when
  const ProvisionResult r = run();
  // then: described after the error, waited on as this up's own
  ASSERT_TRUE(r.node.has_value()) << r.why;
  ASSERT_TRUE(r.made.has_value());
  EXPECT_EQ(r.made->where.zone, "z1");
  EXPECT_TRUE(said("but queued resource tpu in z1 is there (WAITING_FOR_RESOURCES): this up made it"));
}

TEST_F(ProvisionTest, ACreateRefusedWithNothingMadeLeavesNothingToDelete) {
  job_.labels = {{"tpurun-user", "alice"}};
  gcloud_.answers["queued-resources describe z1"] = {{1, "", "NOT_FOUND: not found"}};
  gcloud_.answers["queued-resources create z1"] = {{1, "", "ERROR: Quota 'TPUV4_PODSLICE' exceeded. Limit: 32\n"}};
  const ProvisionResult r = run();
  EXPECT_FALSE(r.node.has_value());
  EXPECT_FALSE(r.made.has_value());
  EXPECT_NE(r.fix.find("quota"), std::string::npos);
}

TEST_F(ProvisionTest, TransientDescribeErrorsWhileWaitingAreTriedAgainAndThePlaceIsKept) {
  // given: a 503 and a 429 while the queued resource waits (issue 39, finding 4)
  job_.labels = {{"tpurun-user", "alice"}};
  gcloud_.answers["queued-resources describe z1"] = {
      {1, "", "NOT_FOUND: not found"}, labelled_qr("WAITING_FOR_RESOURCES", "alice"),
      {1, "", "ERROR: (gcloud) HTTPError 503: The service is currently unavailable.\n"},
      {1, "", "ERROR: (gcloud) HTTPError 429: Quota exceeded for quota metric 'Read requests'\n"},
      labelled_qr("ACTIVE", "alice")};
  gcloud_.answers["queued-resources create z1"] = {ok()};
  gcloud_.answers["tpu-vm describe z1"] = {ok(testing::kDescribeV4_32)};
  // when
  const ProvisionResult r = run();
  // then: the node, in z1; its queued resource never deleted
  ASSERT_TRUE(r.node.has_value()) << r.why;
  EXPECT_EQ(r.where.zone, "z1");
  EXPECT_FALSE(ran(gcloud_.calls, "delete"));
  EXPECT_TRUE(said("trying again in"));
}

TEST_F(ProvisionTest, AnErrorThatIsNotTransientStillStops) {
  job_.labels = {{"tpurun-user", "alice"}};
  gcloud_.answers["queued-resources describe z1"] = {
      {1, "", "NOT_FOUND: not found"}, {1, "", "ERROR: (gcloud) PERMISSION_DENIED: no\n"}};
  gcloud_.answers["queued-resources create z1"] = {ok()};
  gcloud_.answers["queued-resources delete z1"] = {ok()};
  const ProvisionResult r = run();
  EXPECT_FALSE(r.node.has_value());
  EXPECT_NE(r.why.find("PERMISSION_DENIED"), std::string::npos) << r.why;
  ASSERT_TRUE(r.made.has_value());  // the caller deletes it
}

TEST_F(ProvisionTest, TheZoneAnEarlierUpRecordedIsTriedFirstSoItsLeftoverIsNotDuplicated) {
  // given: an up killed (SIGKILL) while its queued resource waited in z2 recorded z2 (issue 39, finding 7)
  job_.labels = {{"tpurun-user", "alice"}};
  job_.first_zone = "z2";
  gcloud_.answers["queued-resources describe z2"] = {labelled_qr("WAITING_FOR_RESOURCES", "alice"),
                                                      labelled_qr("ACTIVE", "alice")};
  gcloud_.answers["tpu-vm describe z2"] = {ok(testing::kDescribeV4_32)};
  std::vector<std::string> creating;
  ProvisionIo io{calls_, cancel_, [&](const std::string& line) { said_.push_back(line); }, [](const std::string&) {},
                 false, [&](const Made& m) { creating.push_back(m.where.zone); }};
  // when
  const ProvisionResult r = provision(job_, io);
  // then: waited on in z2; nothing created, z1 never asked
  ASSERT_TRUE(r.node.has_value()) << r.why;
  EXPECT_EQ(r.where.zone, "z2");
  EXPECT_TRUE(creating.empty());
  EXPECT_FALSE(ran(gcloud_.calls, "z1"));
}

TEST_F(ProvisionTest, WhereACreateGoesIsToldBeforeItIsSent) {
  gcloud_.answers["queued-resources describe z1"] = {{1, "", "NOT_FOUND: not found"}, qr("ACTIVE")};
  gcloud_.answers["queued-resources create z1"] = {ok()};
  gcloud_.answers["tpu-vm describe z1"] = {ok(testing::kDescribeV4_32)};
  size_t calls_when_told = 0;
  ProvisionIo io{calls_, cancel_, [](const std::string&) {}, [](const std::string&) {}, false,
                 [&](const Made&) { calls_when_told = gcloud_.calls.size(); }};
  ASSERT_TRUE(provision(job_, io).node.has_value());
  ASSERT_EQ(calls_when_told, 1u);  // after the describe, before the create
  EXPECT_NE(gcloud_.calls[1].find("queued-resources create"), std::string::npos);
}

}  // namespace
}  // namespace tpurun

// doctor's rules: each seeded problem gives one line with its fix, and
// workers with the same problem share it.
#include "tpurun/doctor/doctor.hpp"

#include <gmock/gmock.h>

#include "../tpu/scan_fixtures.hpp"
#include "fake_transport.hpp"

namespace tpurun {
namespace {

using ::testing::HasSubstr;

LocalFacts here() {
  LocalFacts l;
  l.uid = 1001;
  l.gid = 1001;
  l.user = "alice";
  l.roots = {{"/nfs/staging", true, "nfs"}, {"/nfs/logs", true, "nfs"}};
  return l;
}

WorkerFacts healthy(int i) {
  WorkerFacts w;
  w.worker = testing::make_workers(i + 1)[static_cast<size_t>(i)];
  w.uid = 1001;
  w.gid = 1001;
  w.user = "alice";
  w.sudo = true;
  w.devices = {"/dev/accel0"};
  w.roots = {{"/nfs/staging", true, "nfs"}, {"/nfs/logs", true, "nfs"}};
  w.probe = WorkerFacts::Probe::seen;
  w.clock_offset_s = 0.01;
  w.tmp_free_kib = 10 << 20;
  w.tpu = WorkerScanResult{w.worker, TpuState::free, testing::empty_scan(), ""};
  return w;
}

const Finding* find(const std::vector<Finding>& all, const std::string& check) {
  for (const Finding& f : all) {
    if (f.check == check) return &f;
  }
  return nullptr;
}

TEST(DoctorJudgeTest, AHealthyPodHasNoProblems) {
  EXPECT_TRUE(judge(here(), {healthy(0), healthy(1)}).empty());
}

TEST(DoctorJudgeTest, EachSeededProblemIsOneFindingWithItsFix) {
  std::vector<WorkerFacts> w;
  for (int i = 0; i < 7; ++i) w.push_back(healthy(i));
  w[1].uid = w[2].uid = 1002;       // wrong uid on two workers
  w[1].probe = w[2].probe = WorkerFacts::Probe::unreadable;  // ...which hides the probe: not a mount problem
  w[3].roots[1].present = false;     // no shared mount
  w[3].probe = WorkerFacts::Probe::missing;
  w[4].sudo = false;                 // no sudo
  w[5].clock_offset_s = -7.5;        // a skewed clock
  w[6].devices.clear();              // no TPU device
  auto all = judge(here(), w);

  const Finding* uid = find(all, "uid");
  ASSERT_NE(uid, nullptr);
  EXPECT_EQ(uid->workers, (std::vector<int>{1, 2}));
  EXPECT_THAT(uid->problem, HasSubstr("alice is uid 1002 gid 1001 there but uid 1001 gid 1001 here"));
  EXPECT_THAT(uid->fix, HasSubstr("enable-oslogin=TRUE"));

  const Finding* mount = find(all, "mount");
  ASSERT_NE(mount, nullptr);
  EXPECT_EQ(mount->workers, (std::vector<int>{3}));
  EXPECT_THAT(mount->problem, HasSubstr("/nfs/logs does not exist there"));

  ASSERT_NE(find(all, "sudo"), nullptr);
  EXPECT_EQ(find(all, "sudo")->workers, (std::vector<int>{4}));
  ASSERT_NE(find(all, "clock"), nullptr);
  EXPECT_THAT(find(all, "clock")->problem, HasSubstr("8s behind"));
  ASSERT_NE(find(all, "devices"), nullptr);
  EXPECT_EQ(find(all, "devices")->workers, (std::vector<int>{6}));
  // errors first, then warnings
  EXPECT_EQ(all.front().severity, Finding::Severity::error);
  EXPECT_EQ(all.back().severity, Finding::Severity::warning);
}

TEST(DoctorJudgeTest, AProbeNotSeenOnAPresentRootIsAnotherFileSystem) {
  auto w = healthy(0);
  w.probe = WorkerFacts::Probe::missing;
  auto all = judge(here(), {w});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_THAT(all[0].problem, HasSubstr("not visible there"));
}

TEST(DoctorJudgeTest, AnUnreachableWorkerSaysOnlyThat) {
  WorkerFacts w;
  w.worker = testing::make_workers(1)[0];
  w.error = TransportError{ErrorKind::auth, "authentication as 'alice' refused"};
  auto all = judge(here(), {w});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].check, "reach");
  EXPECT_THAT(all[0].fix, HasSubstr("hostkeys --import"));
}

TEST(DoctorJudgeTest, MixedVersionsWarnNamingTheWorkersThatDiffer) {
  // given: w2 has another jax; w1 has no libtpu; w3 said nothing (no python3)
  std::vector<WorkerFacts> w = {healthy(0), healthy(1), healthy(2), healthy(3)};
  for (int i = 0; i < 3; ++i) {
    w[static_cast<size_t>(i)].versions = {{"python3", "3.10.12"}, {"jax", "0.4.30"}, {"jaxlib", "0.4.30"},
                                          {"libtpu", "0.0.2"}};
  }
  w[2].versions[1].second = "0.4.31";
  w[1].versions[3].second = "-";
  // when
  const auto findings = judge(here(), w);
  // then: one warning per package, naming the odd workers; python3 and jaxlib agree
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].severity, Finding::Severity::warning);
  EXPECT_EQ(findings[0].check, "versions");
  EXPECT_EQ(findings[0].workers, std::vector<int>{2});
  EXPECT_THAT(findings[0].problem, HasSubstr("jax is not the same version on every worker (0.4.30 on w[0-1], 0.4.31 on w2)"));
  EXPECT_THAT(findings[0].fix, HasSubstr("pip install jax==0.4.30"));
  EXPECT_EQ(findings[1].workers, std::vector<int>{1});
  EXPECT_THAT(findings[1].problem, HasSubstr("libtpu is not the same version on every worker (none on w1, 0.0.2 on w[0,2])"));
}

TEST(DoctorFactsTest, ReadsTheVersionsLine) {
  WorkerFacts facts;
  long long t = 0;
  ASSERT_TRUE(parse_doctor_facts("uid 1\ngid 1\nuser a\nversions 3.11.2 0.4.30 - -\nend\n", DoctorProbe{}, facts, t));
  ASSERT_EQ(facts.versions.size(), 4u);
  EXPECT_EQ(facts.versions[1], (std::pair<std::string, std::string>{"jax", "0.4.30"}));
  EXPECT_EQ(facts.versions[3], (std::pair<std::string, std::string>{"libtpu", "-"}));
}

TEST(DoctorFactsTest, ParsesTheScriptsRecords) {
  DoctorProbe probe;
  probe.probe_path = "/nfs/logs/alice/.tpurun-doctor-x";
  WorkerFacts f;
  long long t = 0;
  ASSERT_TRUE(parse_doctor_facts("uid 1001\ngid 1002\nuser alice\nsudo no\nroot 1 nfs /nfs/a b\nroot 0 - /nfs/logs\n"
                                 "device /dev/accel0\nprobe unreadable\ntime 1700000000123456789\ntmpfree 2048\nend\n",
                                 probe, f, t));
  EXPECT_EQ(f.uid, 1001);
  EXPECT_EQ(f.gid, 1002);
  EXPECT_FALSE(f.sudo);
  ASSERT_EQ(f.roots.size(), 2u);
  EXPECT_EQ(f.roots[0].path, "/nfs/a b");
  EXPECT_FALSE(f.roots[1].present);
  EXPECT_EQ(f.probe, WorkerFacts::Probe::unreadable);
  EXPECT_EQ(t, 1700000000123456789LL);
  EXPECT_EQ(f.tmp_free_kib, 2048);
  WorkerFacts cut;
  EXPECT_FALSE(parse_doctor_facts("uid 1001\n", probe, cut, t));
  EXPECT_TRUE(cut.error);
}

}  // namespace
}  // namespace tpurun

// The local --force audit file: escaped JSON lines, in the caller's own dir,
// never written through a symlink or into a file someone else could touch.
#include "tpurun/tpu/kill_audit.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fake_transport.hpp"
#include "fakes/system_fakes.hpp"
#include "fakes/temp_dir.hpp"

namespace tpurun {
namespace {

KillPlan bobs_job() {
  KillPlan plan;
  ScannedProcess p;
  p.pid = 4242;
  p.uid = 1002;
  p.user = "bob";
  p.pgid = 4242;
  p.start_time = 777;
  p.command = "python3 x.py \"$(rm -rf ~)\" `id`";
  plan.victims.push_back({p, "holds /dev/accel0 (--force)"});
  plan.needs_root = true;
  return plan;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

LockScan alice_scan() {
  LockScan scan;
  scan.caller_user = "alice";
  return scan;
}

TEST(KillAuditTest, EntryIsOneEscapedJsonLine) {
  Victim v = bobs_job().victims[0];
  v.process.command += "\nforged line\x01";
  const std::string line = audit_entry(0, "alice", "al", "v4-32", testing::make_workers(1)[0], v);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  auto doc = nlohmann::json::parse(line);
  EXPECT_EQ(doc["time"], "1970-01-01T00:00:00Z");
  EXPECT_EQ(doc["event"], "kill-force");
  EXPECT_EQ(doc["caller"], "alice");
  EXPECT_EQ(doc["local_user"], "al");
  EXPECT_EQ(doc["worker"], "w0");
  EXPECT_EQ(doc["pid"], 4242);
  EXPECT_EQ(doc["start_time"], 777);
  EXPECT_EQ(doc["user"], "bob");
  EXPECT_EQ(doc["command"], v.process.command);  // round-trips exactly
}

TEST(KillAuditTest, DefaultPathIsTheCallersOwnStateDir) {
  testing::FakeEnvironment env;
  env.set("HOME", "/home/alice");
  EXPECT_EQ(default_audit_path(env), "/home/alice/.local/state/tpurun/audit.jsonl");
  env.set("XDG_STATE_HOME", "/x/state");
  EXPECT_EQ(default_audit_path(env), "/x/state/tpurun/audit.jsonl");
}

TEST(KillAuditTest, CreatesPrivateDirsAndAppends) {
  testing::TempDir tmp;
  const std::string path = tmp.path() + "/state/tpurun/audit.jsonl";
  AuditLog log(path, "alice", "sim", [] { return std::time_t{0}; });
  ASSERT_EQ(log.record(testing::make_workers(1)[0], alice_scan(), bobs_job()), std::nullopt);
  ASSERT_EQ(log.record(testing::make_workers(2)[1], alice_scan(), bobs_job()), std::nullopt);
  const std::string text = read(path);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
  EXPECT_NE(text.find("\"worker\":\"w1\""), std::string::npos) << text;
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((tmp.path() + "/state/tpurun").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

// Given a symlink planted where the log goes, when --force records, then the
// link's target is untouched and the record is refused (nothing signalled).
TEST(KillAuditTest, RefusesASymlinkAndLeavesItsTargetAlone) {
  testing::TempDir tmp;
  const std::string target = tmp.write("bashrc", "PS1=x\n");
  ::mkdir((tmp.path() + "/d").c_str(), 0700);
  ASSERT_EQ(::symlink(target.c_str(), (tmp.path() + "/d/audit.jsonl").c_str()), 0);
  AuditLog log(tmp.path() + "/d/audit.jsonl", "alice", "sim", [] { return std::time_t{0}; });
  auto error = log.record(testing::make_workers(1)[0], alice_scan(), bobs_job());
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("symlink"), std::string::npos) << *error;
  EXPECT_EQ(read(target), "PS1=x\n");
}

TEST(KillAuditTest, RefusesAFileOrDirOthersCanWrite) {
  testing::TempDir tmp;
  const std::string path = tmp.write("d/audit.jsonl", "");
  ::chmod(path.c_str(), 0666);
  AuditLog log(path, "alice", "sim", [] { return std::time_t{0}; });
  auto error = log.record(testing::make_workers(1)[0], alice_scan(), bobs_job());
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("lets others write"), std::string::npos) << *error;
  ::chmod(path.c_str(), 0600);
  ::chmod((tmp.path() + "/d").c_str(), 0777);
  error = log.record(testing::make_workers(1)[0], alice_scan(), bobs_job());
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("refusing the directory"), std::string::npos) << *error;
}

TEST(KillAuditTest, RefusesAFileSomeoneElseOwns) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file away";
  testing::TempDir tmp;
  const std::string path = tmp.write("d/audit.jsonl", "");
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
  ::chmod(path.c_str(), 0600);
  AuditLog log(path, "root", "sim", [] { return std::time_t{0}; });
  auto error = log.record(testing::make_workers(1)[0], alice_scan(), bobs_job());
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("belongs to uid 65534"), std::string::npos) << *error;
}

}  // namespace
}  // namespace tpurun

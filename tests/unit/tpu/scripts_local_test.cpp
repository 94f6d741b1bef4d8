// The real scan and kill scripts, run by the local shell against real
// processes holding a stand-in device file in a temp dir. Nothing outside
// that dir and the processes this test starts is touched.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "fake_transport.hpp"
#include "tpurun/tpu/kill.hpp"
#include "transport/local_transport.hpp"

namespace tpurun {
namespace {

// Waits for `ready` to hold, polling; false after a generous bound (a
// loaded machine is slow; the state always comes).
template <typename Ready>
bool wait_for(Ready ready) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!ready()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::string cmdline_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::replace(text.begin(), text.end(), '\0', ' ');
  return text;
}

// Whether process `pid` has `path` open.
bool has_open(pid_t pid, const std::string& path) {
  std::error_code ec;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code link_ec;
    if (std::filesystem::read_symlink(fd.path(), link_ec) == path) return true;
  }
  return false;
}

class LocalScriptsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/tpurun-unit-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    std::ofstream(dir_ + "/accel0").put('\n');
    run_id_ = "unit-" + std::to_string(std::random_device()());
  }

  void TearDown() override {
    if (job_ > 0) {
      ::kill(-job_, SIGKILL);
      ::waitpid(job_, nullptr, 0);
    }
    std::system(("rm -rf " + dir_).c_str());
  }

  // A job in its own session: the shell opens the device, ignores SIGTERM
  // (inherited by its children), and starts a child; both hold the device.
  // Returns once both are the sleeps they become (the scan reads their
  // command lines), the child's pid in `child_`.
  void start_job() {
    const std::string script = "exec 3<" + dir_ + "/accel0; trap '' TERM; sleep 300 & echo $! >" + dir_ +
                               "/child.tmp && mv " + dir_ + "/child.tmp " + dir_ + "/child; exec sleep 301";
    job_ = fork();
    ASSERT_GE(job_, 0);
    if (job_ == 0) {
      setsid();
      setenv("TPURUN_RUN_ID", run_id_.c_str(), 1);
      execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    ASSERT_TRUE(wait_for([&] { return access((dir_ + "/child").c_str(), F_OK) == 0; })) << "no child";
    std::ifstream(dir_ + "/child") >> child_;
    ASSERT_GT(child_, 0);
    ASSERT_TRUE(wait_for([&] { return cmdline_of(job_) == "sleep 301 " && cmdline_of(child_) == "sleep 300 "; }))
        << "the job and its child did not become sleeps: " << cmdline_of(job_) << "| " << cmdline_of(child_);
  }

  std::vector<std::string> globs() const { return {dir_ + "/accel*"}; }

  std::string dir_;
  std::string run_id_;
  pid_t job_ = -1;
  pid_t child_ = -1;
};

TEST_F(LocalScriptsTest, ScanFindsTheJobAndItsChildWithRunId) {
  start_job();
  LocalTransport transport;
  auto results = scan_workers(testing::make_workers(1), transport, 1, CancelToken(), globs());
  ASSERT_TRUE(results[0].scan) << results[0].error;
  const LockScan& scan = *results[0].scan;
  EXPECT_EQ(scan.caller_uid, static_cast<int>(getuid()));
  EXPECT_EQ(scan.caller_gid, static_cast<int>(getgid()));  // stage compares both with the dev VM's
  std::vector<int> pids;
  for (const ScannedProcess& p : scan.holders) {
    pids.push_back(p.pid);
    EXPECT_EQ(p.uid, static_cast<int>(getuid()));
    EXPECT_EQ(p.pgid, job_);
    EXPECT_EQ(p.devices, std::vector<std::string>{dir_ + "/accel0"});
    EXPECT_EQ(p.run_id, run_id_);
    EXPECT_EQ(p.command.rfind("sleep 30", 0), 0u) << p.command;
  }
  ASSERT_EQ(pids.size(), 2u);
  EXPECT_TRUE(std::find(pids.begin(), pids.end(), job_) != pids.end());
  EXPECT_NE(results[0].state, TpuState::free);
}

// The job ignores SIGTERM: after the grace period SIGKILL takes the group.
TEST_F(LocalScriptsTest, KillScriptTakesTheWholeGroupWithSigkillAfterGrace) {
  start_job();
  LocalTransport transport;
  auto conn = transport.connect(testing::make_workers(1)[0], CancelToken());
  ASSERT_TRUE(conn);
  auto scan = scan_connection(**conn, testing::make_workers(1)[0], {globs(), true}, CancelToken());
  ASSERT_TRUE(scan && scan->scan);
  KillPlan plan = plan_kill(*scan->scan, {run_id_, false});
  ASSERT_EQ(plan.victims.size(), 2u);
  EXPECT_EQ(plan.groups, std::vector<int>{job_});
  EXPECT_FALSE(plan.needs_root);

  CaptureSink sink;
  auto exit = (*conn)->run(build_kill_command(plan, 300), sink, CancelToken());
  ASSERT_TRUE(exit);

  EXPECT_NE(sink.out.find("signal TERM -" + std::to_string(job_) + " ok"), std::string::npos) << sink.out;
  EXPECT_NE(sink.out.find("signal KILL -" + std::to_string(job_) + " ok"), std::string::npos) << sink.out;
  EXPECT_NE(sink.out.find("gone " + std::to_string(job_) + " kill"), std::string::npos) << sink.out;
  EXPECT_EQ(sink.out.find("alive"), std::string::npos) << sink.out;
  EXPECT_NE(sink.out.find("\nend\n"), std::string::npos) << sink.out;
  int status = 0;
  ASSERT_EQ(::waitpid(job_, &status, 0), job_);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  job_ = -1;

  auto after = scan_connection(**conn, testing::make_workers(1)[0], {globs(), false}, CancelToken());
  ASSERT_TRUE(after && after->scan);
  EXPECT_TRUE(after->scan->holders.empty());
}

// Field 22 of /proc/PID/stat: the start time the kill items carry.
std::uint64_t start_time_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(") ") + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
  }
  return std::stoull(field);
}

TEST_F(LocalScriptsTest, ScanRecordsEachProcesssStartTimeInKillMode) {
  start_job();
  LocalTransport transport;
  auto conn = transport.connect(testing::make_workers(1)[0], CancelToken());
  ASSERT_TRUE(conn);
  auto scan = scan_connection(**conn, testing::make_workers(1)[0], {globs(), true}, CancelToken());
  ASSERT_TRUE(scan && scan->scan) << scan->error;
  auto holder = std::find_if(scan->scan->holders.begin(), scan->scan->holders.end(),
                             [&](const ScannedProcess& p) { return p.pid == job_; });
  ASSERT_NE(holder, scan->scan->holders.end());
  EXPECT_EQ(holder->start_time, start_time_of(job_));
  auto in_table = std::find_if(scan->scan->processes.begin(), scan->scan->processes.end(),
                               [&](const ScannedProcess& p) { return p.pid == job_; });
  ASSERT_NE(in_table, scan->scan->processes.end());
  EXPECT_EQ(in_table->start_time, start_time_of(job_));
}

// A link target with a newline cannot forge a record: another process of
// ours (`victim`) opens nothing, yet a target "DIR/accel0\nH /proc/VICTIM/fd
// DIR/accel0" read as two lines would be a second record, one whose device
// matches the glob, naming the victim as holding the TPU.
TEST_F(LocalScriptsTest, ALinkTargetWithANewlineForgesNoHolder) {
  pid_t victim = fork();
  ASSERT_GE(victim, 0);
  if (victim == 0) {
    execl("/bin/sleep", "sleep", "300", static_cast<char*>(nullptr));
    _exit(127);
  }
  const std::string forged_dir = dir_ + "/accel0\nH /proc/" + std::to_string(victim) + "/fd " + dir_;
  ASSERT_EQ(std::system(("mkdir -p '" + forged_dir + "'").c_str()), 0);
  std::ofstream(forged_dir + "/accel0").put('\n');
  const std::string script = "exec 3<'" + forged_dir + "/accel0'; echo ready >" + dir_ + "/ready; exec sleep 300";
  job_ = fork();
  ASSERT_GE(job_, 0);
  if (job_ == 0) {
    setsid();
    execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Once "ready" exists the forged "device" is open (fd 3, kept across exec).
  ASSERT_TRUE(wait_for([&] { return access((dir_ + "/ready").c_str(), F_OK) == 0; })) << "the job did not start";
  ASSERT_TRUE(has_open(job_, forged_dir + "/accel0"));
  LocalTransport transport;
  // One glob, and several (their common prefix is tested first).
  for (const auto& g : {globs(), std::vector<std::string>{dir_ + "/accel*", dir_ + "/vfio/[0-9]*"}}) {
    auto results = scan_workers(testing::make_workers(1), transport, 1, CancelToken(), g);
    ASSERT_TRUE(results[0].scan) << results[0].error;
    for (const ScannedProcess& p : results[0].scan->holders) {
      EXPECT_NE(p.pid, victim) << "forged holder";
      EXPECT_EQ(p.devices[0].find('\n'), std::string::npos);
    }
  }
  ::kill(victim, SIGKILL);
  ::waitpid(victim, nullptr, 0);
}

// Several globs: each is looked for; a file that shares only their common
// prefix (which the scan tests first, to read most fds once) is not a device.
TEST_F(LocalScriptsTest, ScanWithSeveralGlobsFindsEachAndNothingElseUnderTheirPrefix) {
  start_job();
  ASSERT_EQ(std::system(("mkdir " + dir_ + "/vfio && : >" + dir_ + "/vfio/0 && : >" + dir_ + "/other").c_str()), 0);
  auto hold = [&](const std::string& redirections) {
    pid_t pid = fork();
    if (pid == 0) {
      setsid();
      const std::string script = "exec " + redirections + "; exec sleep 300";
      execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    return pid;
  };
  pid_t vfio = hold("3<" + dir_ + "/other 4<" + dir_ + "/vfio/0");
  pid_t other = hold("3<" + dir_ + "/other");
  ASSERT_GT(vfio, 0);
  ASSERT_GT(other, 0);
  ASSERT_TRUE(wait_for([&] {
    return has_open(vfio, dir_ + "/vfio/0") && has_open(vfio, dir_ + "/other") && has_open(other, dir_ + "/other");
  })) << "the holders' files are not open";
  LocalTransport transport;
  auto results = scan_workers(testing::make_workers(1), transport, 1, CancelToken(),
                              {dir_ + "/accel*", dir_ + "/vfio/[0-9]*"});
  for (pid_t pid : {vfio, other}) {
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  ASSERT_TRUE(results[0].scan) << results[0].error;
  std::map<int, std::vector<std::string>> held;
  for (const ScannedProcess& p : results[0].scan->holders) held[p.pid] = p.devices;
  EXPECT_EQ(held[job_], std::vector<std::string>{dir_ + "/accel0"});
  EXPECT_EQ(held[vfio], std::vector<std::string>{dir_ + "/vfio/0"});
  EXPECT_EQ(held.count(other), 0u) << "a file under the globs' prefix is not a device";
}

// Without perl (or when it fails) find walks the fds: the same holders, and
// nothing of what the failed perl printed.
TEST_F(LocalScriptsTest, ScanFallsBackToFindWhenPerlFails) {
  start_job();
  RemoteCommand command = build_scan_command({globs(), false});
  const std::string perl = "exec perl -";
  const auto at = command.stdin_data.find(perl);
  ASSERT_NE(at, std::string::npos);
  command.stdin_data.replace(at, perl.size(), "echo 'H /proc/1/fd " + dir_ + "/accel0'; exit 3; perl -");
  LocalTransport transport;
  auto conn = transport.connect(testing::make_workers(1)[0], CancelToken());
  ASSERT_TRUE(conn);
  CaptureSink sink;
  ASSERT_TRUE((*conn)->run(command, sink, CancelToken()));
  auto scan = parse_scan(sink.out);
  ASSERT_TRUE(scan) << scan.error() << "\n" << sink.out;
  std::vector<int> pids;
  for (const ScannedProcess& p : scan->holders) pids.push_back(p.pid);
  std::sort(pids.begin(), pids.end());
  ASSERT_EQ(pids.size(), 2u) << sink.out;
  EXPECT_EQ(pids[0], job_);
  EXPECT_EQ(sink.out.find("hold 1 "), std::string::npos) << sink.out;
}

// A pid whose start time differs from the scan's is another process now
// (the pid was reused): it is not signalled, even with the right owner.
TEST_F(LocalScriptsTest, KillScriptSkipsAPidWhoseStartTimeChanged) {
  start_job();
  KillPlan plan;
  ScannedProcess p;
  p.pid = job_;
  p.uid = static_cast<int>(getuid());
  p.pgid = job_;
  p.start_time = start_time_of(job_) + 1;  // the process the scan saw started at another time
  plan.victims.push_back({p, "test"});
  LocalTransport transport;
  auto conn = transport.connect(testing::make_workers(1)[0], CancelToken());
  CaptureSink sink;
  ASSERT_TRUE((*conn)->run(build_kill_command(plan, 100), sink, CancelToken()));
  EXPECT_NE(sink.out.find("skipped " + std::to_string(job_) + " pid-reused"), std::string::npos) << sink.out;
  EXPECT_EQ(sink.out.find("signal"), std::string::npos) << sink.out;
  EXPECT_EQ(::kill(job_, 0), 0);  // still alive
}

// A pid that is now someone else's process is not signalled.
TEST_F(LocalScriptsTest, KillScriptSkipsAPidWhoseOwnerChanged) {
  start_job();
  KillPlan plan;
  ScannedProcess p;
  p.pid = job_;
  p.uid = static_cast<int>(getuid()) + 4242;  // not who owns it
  p.pgid = job_;
  p.start_time = start_time_of(job_);
  plan.victims.push_back({p, "test"});
  LocalTransport transport;
  auto conn = transport.connect(testing::make_workers(1)[0], CancelToken());
  CaptureSink sink;
  ASSERT_TRUE((*conn)->run(build_kill_command(plan, 100), sink, CancelToken()));
  EXPECT_NE(sink.out.find("skipped " + std::to_string(job_) + " owner-changed"), std::string::npos)
      << sink.out;
  EXPECT_EQ(::kill(job_, 0), 0);  // still alive
}

}  // namespace
}  // namespace tpurun

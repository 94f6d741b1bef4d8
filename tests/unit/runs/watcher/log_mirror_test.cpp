// The log mirror's frames applied to a local dir: logs grow, records are
// written whole, and a job's log that starts again on the worker (a
// recreated TPU VM's new disk) goes on after what came before.
#include <gmock/gmock.h>
#include <fmt/format.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "runs/watcher/log_mirror.hpp"
#include "tpurun/worker/tokens.hpp"
#include "transport/local_transport.hpp"

namespace tpurun {
namespace {

namespace fs = std::filesystem;

std::string frame(char kind, const std::string& path, std::uint64_t offset, const std::string& data,
                  std::uint64_t ino = 7, std::int64_t mtime = 0) {
  return fmt::format("{} {} {} {} {} {}\n", kind, data.size(), offset, path.size(), ino, mtime) + path + data;
}

class LogMirrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/tpurun-mirror-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  void apply(const std::string& frames) {
    std::string buffer = frames;
    ASSERT_TRUE(apply_mirror_frames(dir_, buffer, state_));
    EXPECT_EQ(buffer, "");
  }
  std::string read(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::string dir_;
  MirrorState state_;
};

TEST_F(LogMirrorTest, LogsGrowAndRecordsAreWrittenWhole) {
  apply(frame('A', "worker0.log", 0, "one\n") + frame('W', "worker0.pid", 0, "12 12\n"));
  apply(frame('A', "worker0.log", 4, "two\n") + frame('W', "worker0.exit", 0, "0\n"));
  EXPECT_EQ(read("worker0.log"), "one\ntwo\n");
  EXPECT_EQ(read("worker0.pid"), "12 12\n");
  EXPECT_EQ(read("worker0.exit"), "0\n");
  EXPECT_EQ(state_.files["worker0.log"].offset, 8u);
}

TEST_F(LogMirrorTest, AFrameThatHasNotAllArrivedWaits) {
  std::string whole = frame('A', "worker0.log", 0, "hello\n");
  std::string buffer = whole.substr(0, whole.size() - 2);
  ASSERT_TRUE(apply_mirror_frames(dir_, buffer, state_));
  EXPECT_EQ(read("worker0.log"), "");
  buffer += whole.substr(whole.size() - 2);
  ASSERT_TRUE(apply_mirror_frames(dir_, buffer, state_));
  EXPECT_EQ(read("worker0.log"), "hello\n");
}

TEST_F(LogMirrorTest, ALogOnANewVmGoesOnAfterTheOldVmsOutput) {
  state_.worker = 1;
  apply(frame('A', "worker1.log", 0, "attempt 1: Traceback\n"));
  state_.new_host();  // recreated: nothing of the new disk was sent
  EXPECT_TRUE(state_.files.empty());
  apply(frame('A', "worker1.log", 0, "attempt 2\n"));
  apply(frame('A', "worker1.log", 10, "done\n"));
  EXPECT_EQ(read("worker1.log"), "attempt 1: Traceback\nattempt 2\ndone\n");
}

TEST_F(LogMirrorTest, ALogThatStartsAgainOnTheSameWorkerKeepsWhatCameBefore) {
  state_.worker = 1;
  apply(frame('A', "worker1.log", 0, "first run\n"));
  apply(frame('A', "worker1.log", 0, "again\n"));
  EXPECT_EQ(read("worker1.log"), "first run\nagain\n");
}

TEST_F(LogMirrorTest, AnotherFileThatStartsAgainIsSentWhole) {
  apply(frame('A', "events.out.tfevents.1", 0, std::string(5000, 'a')));
  apply(frame('A', "events.out.tfevents.1", 0, "bb"));
  EXPECT_EQ(read("w0/events.out.tfevents.1"), "bb");
}

TEST_F(LogMirrorTest, AJobsLogTruncatedAndShorterIsReplacedNotAppended) {
  apply(frame('A', "app.log", 0, "a long first version\n"));
  apply(frame('A', "app.log", 0, "short\n", 8));
  EXPECT_EQ(read("w0/app.log"), "short\n");
}

// Finding 4 of issue 37: every worker's app.log is its own here.
TEST_F(LogMirrorTest, SameNamedFilesOfTwoWorkersStayApart) {
  MirrorState w1;
  w1.worker = 1;
  apply(frame('A', "app.log", 0, "from w0\n") + frame('W', "tb/metrics.csv", 0, "w0,1\n"));
  std::string buffer = frame('A', "app.log", 0, "from w1\n") + frame('W', "tb/metrics.csv", 0, "w1,1\n") +
                       frame('W', "worker1.exit", 0, "0\n") + frame('W', "worker0.exit", 0, "planted\n");
  ASSERT_TRUE(apply_mirror_frames(dir_, buffer, w1));
  EXPECT_EQ(read("w0/app.log"), "from w0\n");
  EXPECT_EQ(read("w1/app.log"), "from w1\n");
  EXPECT_EQ(read("w0/tb/metrics.csv"), "w0,1\n");
  EXPECT_EQ(read("w1/tb/metrics.csv"), "w1,1\n");
  EXPECT_EQ(read("worker1.exit"), "0\n");          // its own record, where the gang rules read it
  EXPECT_EQ(read("w1/worker0.exit"), "planted\n");  // another worker's name is only a file of its job
  EXPECT_FALSE(fs::exists(dir_ + "/worker0.exit"));
}

TEST_F(LogMirrorTest, AFullDiskIsNoted) {
  apply(std::string(worker::kMirrorSpace) + " 4096\n");
  EXPECT_EQ(state_.low_space, 4096u);
}

TEST_F(LogMirrorTest, WhatArrivedIsToldOnStdinNotInArgv) {
  apply(frame('A', "a b.log", 0, "12345", 42, 1000) + frame('W', "worker0.exit", 0, "0\n", 43, 2000));
  EXPECT_EQ(state_.have_list(), "2\n5 42 1000 7\na b.log2 43 2000 12\nworker0.exit");
}

TEST_F(LogMirrorTest, APathOutsideTheDirIsRefused) {
  std::string buffer = frame('A', "../escape.log", 0, "x");
  EXPECT_FALSE(apply_mirror_frames(dir_, buffer, state_));
  EXPECT_FALSE(fs::exists(fs::path(dir_).parent_path() / "escape.log"));
}

// The whole mirror, worker/log_mirror.py started by the watcher's command
// line on a "worker" that is this host: the run's files arrive here, and
// finish() waits for the last of them.
TEST_F(LogMirrorTest, TheWorkersFilesArriveThroughTheMirrorProgram) {
  char pattern[] = "/tmp/tpurun-mirror-remote-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string remote = pattern;
  std::ofstream(remote + "/worker0.log") << "step 1\nstep 2\n";
  std::ofstream(remote + "/worker0.exit") << "0\n";
  fs::create_directories(remote + "/many");
  for (int i = 0; i < 500; ++i) std::ofstream(fmt::format("{}/many/f{}.tmp", remote, i)) << i << "\n";
  LocalTransport transport;
  std::vector<MissingLogs> missing;
  {
    LogMirror mirror({Worker{0, "localhost", 22}}, transport, remote, dir_);
    mirror.start();
    mirror.finish(60);
    missing = mirror.missing();
  }
  fs::remove_all(remote);
  EXPECT_TRUE(missing.empty());
  EXPECT_EQ(read("worker0.log"), "step 1\nstep 2\n");
  EXPECT_EQ(read("worker0.exit"), "0\n");
  for (int i = 0; i < 500; ++i) ASSERT_EQ(read(fmt::format("w0/many/f{}.tmp", i)), fmt::format("{}\n", i));
}

// A worker that cannot be reached at the run's end: what is missing, and where.
TEST_F(LogMirrorTest, AWorkerThatCannotBeAskedIsNamedWithWhereItsFilesAre) {
  LocalTransport transport;
  LogMirror mirror({Worker{3, "localhost", 22}}, transport, "/nonexistent/tpurun-run", dir_);
  mirror.finish(60);  // never started: no last round
  const auto missing = mirror.missing();
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].worker, 3);
  EXPECT_EQ(missing[0].path, "/nonexistent/tpurun-run");
}

}  // namespace
}  // namespace tpurun

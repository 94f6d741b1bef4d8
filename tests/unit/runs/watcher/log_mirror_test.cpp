// The log mirror's frames applied to a local dir: logs grow, records are
// written whole, and a job's log that starts again on the worker (a
// recreated TPU VM's new disk) goes on after what came before.
#include <gmock/gmock.h>
#include <fmt/format.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "runs/watcher/log_mirror.hpp"
#include "transport/local_transport.hpp"

namespace tpurun {
namespace {

namespace fs = std::filesystem;

std::string frame(char kind, const std::string& path, std::uint64_t offset, const std::string& data) {
  return fmt::format("{} {} {} {}\n", kind, data.size(), offset, path.size()) + path + data;
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
  EXPECT_EQ(state_.offsets["worker0.log"], 8u);
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
  apply(frame('A', "worker1.log", 0, "attempt 1: Traceback\n"));
  state_.new_host();  // recreated: nothing of the new disk was sent
  EXPECT_TRUE(state_.offsets.empty());
  apply(frame('A', "worker1.log", 0, "attempt 2\n"));
  apply(frame('A', "worker1.log", 10, "done\n"));
  EXPECT_EQ(read("worker1.log"), "attempt 1: Traceback\nattempt 2\ndone\n");
}

TEST_F(LogMirrorTest, ALogThatStartsAgainOnTheSameWorkerKeepsWhatCameBefore) {
  apply(frame('A', "worker1.log", 0, "first run\n"));
  apply(frame('A', "worker1.log", 0, "again\n"));
  EXPECT_EQ(read("worker1.log"), "first run\nagain\n");
}

TEST_F(LogMirrorTest, AnotherFileThatStartsAgainIsSentWhole) {
  apply(frame('A', "events.out.tfevents.1", 0, std::string(5000, 'a')));
  apply(frame('A', "events.out.tfevents.1", 0, "bb"));
  EXPECT_EQ(read("events.out.tfevents.1"), "bb");
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
  LocalTransport transport;
  {
    LogMirror mirror({Worker{0, "localhost", 22}}, transport, remote, dir_);
    mirror.start();
    mirror.finish(60);
  }
  fs::remove_all(remote);
  EXPECT_EQ(read("worker0.log"), "step 1\nstep 2\n");
  EXPECT_EQ(read("worker0.exit"), "0\n");
}

}  // namespace
}  // namespace tpurun

// Pushing a snapshot to a "worker" that is a local python3 process with a
// staging root of its own: what a pod with no shared mount does over SSH.
#include <gmock/gmock.h>

#include <thread>

#include "fake_transport.hpp"
#include "staging_fixture.hpp"
#include "tpurun/staging/push.hpp"
#include "transport/local_exec.hpp"

namespace tpurun::testing_staging {
namespace {

using ::testing::HasSubstr;

// Breaks the stream after `budget` bytes written: a cut connection.
class CutStream : public ExecStream {
 public:
  CutStream(std::unique_ptr<ExecStream> inner, size_t budget) : inner_(std::move(inner)), budget_(budget) {}
  std::optional<TransportError> write(std::string_view data) override {
    if (data.size() > budget_) {
      inner_.reset();  // the channel goes: the worker sees EOF
      return TransportError{ErrorKind::channel, "connection cut"};
    }
    budget_ -= data.size();
    return inner_->write(data);
  }
  Result<StreamRead, TransportError> read(int wait_ms) override {
    if (!inner_) return unexpected(TransportError{ErrorKind::channel, "connection cut"});
    return inner_->read(wait_ms);
  }
  void close_input() override {}
  std::string err() const override { return inner_ ? inner_->err() : ""; }
  std::optional<int> exit_code() override { return inner_ ? inner_->exit_code() : std::nullopt; }

 private:
  std::unique_ptr<ExecStream> inner_;
  size_t budget_;
};

class PushTest : public StagingTest {
 protected:
  void SetUp() override {
    StagingTest::SetUp();
    worker_ = scratch_ + "/worker";
    transport_.behaviour[0].exec = [this](const std::string& command_line)
        -> Result<std::unique_ptr<ExecStream>, TransportError> {
      auto local = open_local_exec(command_line);
      if (!local || cut_after_ == 0) return local;
      return std::unique_ptr<ExecStream>(new CutStream(std::move(*local), cut_after_));
    };
    write("main.py", "print('hello')\n");
    write("bin/run.sh", "#!/bin/sh\necho run\n", 0755);
    write("odd name\nwith newline.txt", "odd\n");
    write("data/big.bin", std::string(300 * 1024, 'b'));
    write("data/same.txt", "print('hello')\n");  // the same content as main.py: one object
    fs::create_symlink("main.py", fs::path(project_) / "link.py");
  }

  Result<PushResult, std::string> push(const StagedSnapshot& s, const std::string& run = "run1") {
    auto connection = transport_.connect(workers_[0], CancelToken());
    EXPECT_TRUE(connection.ok());
    PushTarget target{worker_ + "/staging", worker_ + "/logs", "alice", "proj", run};
    return push_snapshot(**connection, s, target, CancelToken());
  }

  std::string worker_;
  size_t cut_after_ = 0;
  testing::FakeTransport transport_;
  std::vector<Worker> workers_ = testing::make_workers(1);
};

TEST_F(PushTest, AFreshWorkerGetsTheWholeSnapshotAndTheRunsLogDir) {
  const StagedSnapshot s = stage_ok();
  auto pushed = push(s);
  ASSERT_TRUE(pushed.ok()) << pushed.error();
  EXPECT_FALSE(pushed->had);
  EXPECT_EQ(pushed->objects_sent, 4u);  // main.py and same.txt share one
  EXPECT_EQ(pushed->staged_dir, worker_ + "/staging/alice/" + s.name);
  EXPECT_EQ(pushed->log_dir, worker_ + "/logs/alice/proj/run1");
  // The same files, bytes, x bits and symlink as the snapshot here.
  EXPECT_EQ(paths_in(pushed->staged_dir), paths_in(s.dir));
  for (const std::string& p : paths_in(s.dir)) {
    const struct stat here = lstat_of(s.dir + "/" + p), there = lstat_of(pushed->staged_dir + "/" + p);
    EXPECT_EQ(here.st_mode, there.st_mode) << p;
    if (S_ISREG(here.st_mode)) EXPECT_EQ(read(s.dir + "/" + p), read(pushed->staged_dir + "/" + p)) << p;
  }
  EXPECT_EQ(fs::read_symlink(pushed->staged_dir + "/link.py"), "main.py");
  // Read-only, and the user's dirs are private.
  EXPECT_EQ(lstat_of(pushed->staged_dir).st_mode & 0777, 0555u);
  EXPECT_EQ(lstat_of(worker_ + "/staging/alice").st_mode & 0777, 0700u);
  EXPECT_EQ(lstat_of(pushed->log_dir).st_mode & 0777, 0700u);
}

TEST_F(PushTest, AnUnchangedTreeSendsNothing) {
  const StagedSnapshot s = stage_ok();
  ASSERT_TRUE(push(s).ok());
  auto again = push(s, "run2");
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_TRUE(again->had);
  EXPECT_EQ(again->bytes_sent, 0u);
  EXPECT_EQ(again->log_dir, worker_ + "/logs/alice/proj/run2");
}

TEST_F(PushTest, ANewSnapshotSendsOnlyTheContentTheWorkerLacks) {
  ASSERT_TRUE(push(stage_ok()).ok());
  write("main.py", "print('changed')\n");
  const StagedSnapshot changed = stage_ok();
  auto pushed = push(changed);
  ASSERT_TRUE(pushed.ok()) << pushed.error();
  EXPECT_FALSE(pushed->had);
  EXPECT_EQ(pushed->objects_sent, 1u);
  EXPECT_EQ(pushed->bytes_sent, std::string("print('changed')\n").size());
  EXPECT_EQ(read(pushed->staged_dir + "/main.py"), "print('changed')\n");
  EXPECT_EQ(read(pushed->staged_dir + "/data/big.bin").size(), 300u * 1024);
}

TEST_F(PushTest, ACutConnectionLeavesNoHalfSnapshot) {
  const StagedSnapshot s = stage_ok();
  cut_after_ = 100 * 1024;  // the manifest goes, then the cut comes inside big.bin
  auto pushed = push(s);
  ASSERT_FALSE(pushed.ok());
  EXPECT_THAT(pushed.error(), HasSubstr("cut"));
  // Give the worker's side a moment to see EOF and clean up.
  for (int i = 0; i < 100; ++i) {
    bool tmp = false;
    for (const auto& e : fs::directory_iterator(worker_ + "/staging/alice")) {
      tmp = tmp || e.path().filename().string().starts_with(".tmp-");
    }
    if (!tmp) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const auto& e : fs::directory_iterator(worker_ + "/staging/alice")) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name == ".objects") << "left behind: " << name;
  }
  // and the next push completes it.
  cut_after_ = 0;
  auto again = push(s);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(read(again->staged_dir + "/data/big.bin").size(), 300u * 1024);
}

TEST(RemotePathWord, HomeRelativePathsAreExpandedByTheRemoteShell) {
  EXPECT_EQ(remote_path_word("~/.tpurun/staging"), "\"$HOME\"/'.tpurun/staging'");
  EXPECT_EQ(remote_path_word("/srv/x y"), "'/srv/x y'");
}

}  // namespace
}  // namespace tpurun::testing_staging

// Pushing a snapshot to a "worker" that is a local python3 process with a
// staging root of its own: what a pod with no shared mount does over SSH.
#include <gmock/gmock.h>

#include <thread>

#include "fake_transport.hpp"
#include "staging_fixture.hpp"
#include "tpurun/staging/push.hpp"
#include "tpurun/staging/worker_gc.hpp"
#include "tpurun/worker/tokens.hpp"
#include "transport/local_exec.hpp"
#include "transport/local_transport.hpp"

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

TEST_F(PushTest, ALogDirWithSpacesComesBackWhole) {
  auto connection = transport_.connect(workers_[0], CancelToken());
  ASSERT_TRUE(connection.ok());
  const PushTarget target{worker_ + "/staging", worker_ + "/logs", "alice", "my project", "run1"};
  auto pushed = push_snapshot(**connection, snapshot_ok(), target, CancelToken());
  ASSERT_TRUE(pushed.ok()) << pushed.error();
  EXPECT_EQ(pushed->log_dir, worker_ + "/logs/alice/my project/run1");
}

TEST_F(PushTest, AFreshWorkerGetsTheWholeSnapshotAndTheRunsLogDir) {
  const StagedSnapshot s = snapshot_ok();
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
  const StagedSnapshot s = snapshot_ok();
  ASSERT_TRUE(push(s).ok());
  auto again = push(s, "run2");
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_TRUE(again->had);
  EXPECT_EQ(again->bytes_sent, 0u);
  EXPECT_EQ(again->log_dir, worker_ + "/logs/alice/proj/run2");
}

TEST_F(PushTest, ANewSnapshotSendsOnlyTheContentTheWorkerLacks) {
  ASSERT_TRUE(push(snapshot_ok()).ok());
  write("main.py", "print('changed')\n");
  const StagedSnapshot changed = snapshot_ok();
  auto pushed = push(changed);
  ASSERT_TRUE(pushed.ok()) << pushed.error();
  EXPECT_FALSE(pushed->had);
  EXPECT_EQ(pushed->objects_sent, 1u);
  EXPECT_EQ(pushed->bytes_sent, std::string("print('changed')\n").size());
  EXPECT_EQ(read(pushed->staged_dir + "/main.py"), "print('changed')\n");
  EXPECT_EQ(read(pushed->staged_dir + "/data/big.bin").size(), 300u * 1024);
}

TEST_F(PushTest, AnEarlierFileThatWasChangedThereIsSentAgain) {
  auto first = push(snapshot_ok());
  ASSERT_TRUE(first.ok()) << first.error();
  // Someone made the worker's earlier snapshot writable and changed a file in it.
  const std::string big = first->staged_dir + "/data/big.bin";
  ::chmod((first->staged_dir + "/data").c_str(), 0755);
  ::chmod(big.c_str(), 0644);
  std::ofstream(big, std::ios::app) << "tampered";
  write("main.py", "print('changed')\n");
  auto pushed = push(snapshot_ok());
  ASSERT_TRUE(pushed.ok()) << pushed.error();
  EXPECT_EQ(pushed->objects_sent, 2u);  // main.py's new content, and big.bin again
  EXPECT_EQ(read(pushed->staged_dir + "/data/big.bin"), std::string(300 * 1024, 'b'));
}

TEST_F(PushTest, ACutConnectionLeavesNoHalfSnapshot) {
  const StagedSnapshot s = snapshot_ok();
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
    ADD_FAILURE() << "left behind: " << e.path().filename().string();
  }
  // and the next push completes it.
  cut_after_ = 0;
  auto again = push(s);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(read(again->staged_dir + "/data/big.bin").size(), 300u * 1024);
}

TEST_F(PushTest, ContentAnEarlierSnapshotHasIsLinkedFromItNotSentOrCopied) {
  auto first = push(snapshot_ok());
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_TRUE(fs::exists(worker_ + "/staging/alice/.manifest-" + fs::path(first->staged_dir).filename().string()));
  write("main.py", "print('changed')\n");
  auto second = push(snapshot_ok());
  ASSERT_TRUE(second.ok()) << second.error();
  EXPECT_EQ(second->objects_sent, 1u);
  // One file on the worker's disk for both snapshots' big.bin, x bits kept.
  EXPECT_EQ(lstat_of(first->staged_dir + "/data/big.bin").st_ino, lstat_of(second->staged_dir + "/data/big.bin").st_ino);
  EXPECT_EQ(lstat_of(second->staged_dir + "/bin/run.sh").st_mode & 0777, 0555u);
  EXPECT_EQ(read(second->staged_dir + "/data/same.txt"), "print('hello')\n");
}

TEST_F(PushTest, ASourceThatChangedOrWentIsNotTrustedItsContentIsSentAgain) {
  auto first = push(snapshot_ok());
  ASSERT_TRUE(first.ok()) << first.error();
  // The earlier snapshot's big.bin is gone (say, a hand's rm -rf).
  fs::permissions(first->staged_dir + "/data", fs::perms::owner_all);
  fs::remove(first->staged_dir + "/data/big.bin");
  write("main.py", "print('changed')\n");
  auto second = push(snapshot_ok());
  ASSERT_TRUE(second.ok()) << second.error();
  EXPECT_EQ(second->objects_sent, 2u);  // main.py's new content, and big.bin again
  EXPECT_EQ(read(second->staged_dir + "/data/big.bin").size(), 300u * 1024);
}

TEST_F(PushTest, TheObjectStoreOfEarlierBuildsIsNotTrusted) {
  const StagedSnapshot s = snapshot_ok();
  // What an earlier build kept on the worker: .objects/ab/cdef..., read-only.
  const std::string store = worker_ + "/staging/alice/.objects";
  fs::create_directories(store);
  fs::permissions(worker_ + "/staging/alice", fs::perms::owner_all, fs::perm_options::replace);
  fs::permissions(worker_ + "/staging", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                            fs::perms::others_read | fs::perms::others_exec,
                  fs::perm_options::replace);
  for (const SnapshotEntry& e : s.entries) {
    if (e.symlink || e.path != "data/big.bin") continue;
    fs::create_directories(store + "/" + e.object.substr(0, 2));
    fs::copy_file(s.dir + "/" + e.path, store + "/" + e.object);
  }
  auto pushed = push(s);
  ASSERT_TRUE(pushed.ok()) << pushed.error();
  // Its objects are named by an XXH3 that the worker's Python cannot check:
  // nothing there is trusted, and the content is sent again.
  EXPECT_EQ(pushed->objects_sent, 4u);
  EXPECT_EQ(read(pushed->staged_dir + "/data/big.bin").size(), 300u * 1024);
}

TEST_F(PushTest, GcOnTheWorkerRemovesASnapshotWithItsManifestAndCountsWhatItFreedAndOldRunLogDirs) {
  write("main.py", "print('first')\n");  // content only the first snapshot has
  auto first = push(snapshot_ok());
  ASSERT_TRUE(first.ok()) << first.error();
  write("main.py", "print('changed')\n");
  auto second = push(snapshot_ok());
  ASSERT_TRUE(second.ok()) << second.error();
  const std::string old_name = fs::path(first->staged_dir).filename().string();
  const std::string new_name = fs::path(second->staged_dir).filename().string();
  LocalTransport here;  // gc's program runs to its end: a plain command, here
  auto connection = here.connect(workers_[0], CancelToken());
  ASSERT_TRUE(connection.ok());
  GcRequest request;
  request.user = "alice";
  request.older_than = std::chrono::seconds(0);
  request.now = std::chrono::system_clock::now() + std::chrono::seconds(5);
  request.in_use[new_name] = {};
  // Two runs' log dirs there: one that ended and is whole on the dev VM (it
  // goes), one that is not in that list (a running one, say: it stays).
  for (const std::string run : {"proj/done-run", "proj/running-run"}) {
    fs::create_directories(worker_ + "/logs/alice/" + run);
    std::ofstream(worker_ + "/logs/alice/" + run + "/worker0.log") << "0123456789";
  }
  request.worker_runs_done = {"proj/done-run", "../escape/run"};
  const WorkerGcReport report =
      collect_garbage_on(**connection, worker_ + "/staging", worker_ + "/logs", request, CancelToken());
  ASSERT_EQ(report.error, "");
  EXPECT_EQ(report.snapshots_removed, std::vector<std::string>{old_name});
  EXPECT_EQ(report.runs_removed, std::vector<std::string>{"proj/done-run"});
  EXPECT_EQ(report.run_bytes_freed, 10u);
  EXPECT_FALSE(fs::exists(worker_ + "/logs/alice/proj/done-run"));
  EXPECT_TRUE(fs::exists(worker_ + "/logs/alice/proj/running-run/worker0.log"));
  // Only the first main.py was that snapshot's alone; the rest are linked from the second.
  EXPECT_EQ(report.objects_removed, 1u);
  EXPECT_EQ(report.bytes_freed, std::string("print('first')\n").size());
  EXPECT_FALSE(fs::exists(first->staged_dir));
  EXPECT_FALSE(fs::exists(worker_ + "/staging/alice/.manifest-" + old_name));
  EXPECT_TRUE(fs::exists(worker_ + "/staging/alice/.manifest-" + new_name));
  EXPECT_EQ(read(second->staged_dir + "/data/big.bin").size(), 300u * 1024);
}

// have_command, run by sh as the reservation's shell runs it.
std::string run_sh(const std::string& command_line) {
  LocalTransport here;
  auto connection = here.connect(testing::make_workers(1)[0], CancelToken());
  EXPECT_TRUE(connection.ok());
  CaptureSink sink;
  auto ran = (*connection)->run(RemoteCommand{command_line, "", 10000}, sink, CancelToken());
  EXPECT_TRUE(ran.ok());
  return sink.out;
}

TEST_F(PushTest, TheShellHaveCheckFindsAPushedSnapshotAndMakesTheRunsLogDirPrivate) {
  const StagedSnapshot s = snapshot_ok();
  ASSERT_TRUE(push(s).ok());
  // A project dir's name may hold spaces and shell words: quoted, never run.
  const PushTarget target{worker_ + "/staging", worker_ + "/logs", "alice", "my proj; touch x", "run2"};
  auto had = parse_have_answer(run_sh(have_command(s, target)));
  ASSERT_TRUE(had.has_value());
  EXPECT_TRUE(had->had);
  EXPECT_EQ(had->staged_dir, worker_ + "/staging/alice/" + s.name);
  EXPECT_EQ(had->log_dir, worker_ + "/logs/alice/my proj; touch x/run2");
  EXPECT_EQ(lstat_of(had->log_dir).st_mode & 0777, 0700u);
  EXPECT_FALSE(fs::exists("x"));
}

TEST_F(PushTest, TheShellHaveCheckSaysNeedForASnapshotTheWorkerLacksOrAnUnsafeLogDir) {
  const StagedSnapshot s = snapshot_ok();
  const PushTarget target{worker_ + "/staging", worker_ + "/logs", "alice", "proj", "run1"};
  EXPECT_EQ(run_sh(have_command(s, target)), std::string(worker::kPushNeed) + "\n");  // nothing there yet
  ASSERT_TRUE(push(s).ok());
  fs::permissions(worker_ + "/logs/alice/proj", fs::perms::group_write, fs::perm_options::add);
  const PushTarget other{worker_ + "/staging", worker_ + "/logs", "alice", "proj", "run3"};
  EXPECT_FALSE(parse_have_answer(run_sh(have_command(s, other))).has_value());  // the push says why
}

TEST(RemotePathWord, HomeRelativePathsAreExpandedByTheRemoteShell) {
  EXPECT_EQ(remote_path_word("~/.tpurun/staging"), "\"$HOME\"/'.tpurun/staging'");
  EXPECT_EQ(remote_path_word("/srv/x y"), "'/srv/x y'");
}

}  // namespace
}  // namespace tpurun::testing_staging

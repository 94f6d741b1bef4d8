// Building snapshots: dedup through the object store, the stat cache, names,
// read-only results, and all-or-nothing failure.
#include <gmock/gmock.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <regex>
#include <thread>

#include "staging/snapshot_name.hpp"
#include "staging_fixture.hpp"

namespace tpurun::testing_staging {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using SnapshotTest = StagingTest;

TEST_F(SnapshotTest, IdenticalContentIsOneInodeSharedWithTheStore) {
  // given: two files with the same bytes
  write("a.txt", "same bytes\n");
  write("dir/b.txt", "same bytes\n");

  // when
  StagedSnapshot s = snapshot_ok();

  // then: one inode, linked from both paths and the object store
  struct stat a = lstat_of(s.dir + "/a.txt"), b = lstat_of(s.dir + "/dir/b.txt");
  EXPECT_EQ(a.st_ino, b.st_ino);
  EXPECT_EQ(a.st_nlink, 3u);
  EXPECT_EQ(read(s.dir + "/dir/b.txt"), "same bytes\n");
}

TEST_F(SnapshotTest, AClosedPublishGateLeavesNoSnapshotAndAnOpenOnePublishes) {
  // given: a tree, and a gate that says no (the preflight refused meanwhile)
  write("a.txt", "bytes\n");
  SnapshotRequest closed = request();
  int asked = 0;
  closed.publish_gate = [&] { return ++asked, false; };

  // when
  auto refused = snapshot(closed);

  // then: asked once; no snapshot and no temp dir (the object store may keep
  // the content: it is a cache that gc trims)
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(asked, 1);
  EXPECT_THAT(refused.error().message, HasSubstr("not published"));
  EXPECT_THAT(user_dir_entries(), ElementsAre(".objects"));

  // when: the gate opens
  SnapshotRequest open = request();
  open.publish_gate = [] { return true; };
  auto staged = snapshot(open);

  // then
  ASSERT_TRUE(staged.ok()) << staged.error().message;
  EXPECT_EQ(read(staged->dir + "/a.txt"), "bytes\n");
  EXPECT_THAT(user_dir_entries(), ElementsAre(".objects", staged->name));
}

TEST_F(SnapshotTest, ExecutableAndPlainCopiesOfTheSameBytesAreSeparateObjects) {
  // given: the same bytes, once executable
  write("tool", "#!/bin/sh\necho hi\n", 0755);
  write("tool.txt", "#!/bin/sh\necho hi\n", 0644);

  // when
  StagedSnapshot s = snapshot_ok();

  // then: modes differ, so inodes must too; the store names the x one ".x"
  struct stat x = lstat_of(s.dir + "/tool"), plain = lstat_of(s.dir + "/tool.txt");
  EXPECT_NE(x.st_ino, plain.st_ino);
  EXPECT_EQ(x.st_mode & 07777, 0555u);
  EXPECT_EQ(plain.st_mode & 07777, 0444u);
  int executable_objects = 0;
  for (auto& e : fs::recursive_directory_iterator(staging_ + "/alice/.objects")) {
    if (e.path().extension() == ".x") ++executable_objects;
  }
  EXPECT_EQ(executable_objects, 1);
}

TEST_F(SnapshotTest, RestageOfUnchangedCodeReusesTheSnapshotAndWritesNothing) {
  // given: a first snapshot filled the store and the stat cache
  write("a.py", std::string(5000, 'a'));
  write("pkg/b.py", std::string(7000, 'b'));
  write("empty.py", "");
  StagedSnapshot first = snapshot_ok();
  EXPECT_EQ(first.files_read, 2u);

  // when
  StagedSnapshot second = snapshot_ok();

  // then: the same read-only snapshot, and no new dir
  EXPECT_EQ(second.name, first.name);
  EXPECT_EQ(second.dir, first.dir);
  EXPECT_TRUE(second.reused);
  EXPECT_FALSE(first.reused);
  EXPECT_EQ(second.files_read, 0u);
  EXPECT_EQ(second.bytes, 12000u);
  EXPECT_EQ(second.bytes_reused, 12000u);
  EXPECT_EQ(second.tree_hash, first.tree_hash);
  EXPECT_EQ(user_dir_entries().size(), 2u);  // .objects and the one snapshot

  // and a changed file makes a new snapshot, which shares the unchanged contents
  write("a.py", std::string(5000, 'c'));
  StagedSnapshot third = snapshot_ok();
  EXPECT_FALSE(third.reused);
  EXPECT_NE(third.name, first.name);
  EXPECT_EQ(lstat_of(third.dir + "/pkg/b.py").st_ino, lstat_of(first.dir + "/pkg/b.py").st_ino);
}

TEST_F(SnapshotTest, ChangedFileIsReadAgainAndOnlyIt) {
  // given: a staged project, then one file rewritten with the same size
  write("a.py", "version 1\n");
  write("b.py", "unchanged\n");
  StagedSnapshot first = snapshot_ok();
  write("a.py", "version 2\n");

  // when
  StagedSnapshot second = snapshot_ok();

  // then
  EXPECT_EQ(second.files_read, 1u);
  EXPECT_EQ(read(second.dir + "/a.py"), "version 2\n");
  EXPECT_EQ(read(first.dir + "/a.py"), "version 1\n");
  EXPECT_NE(second.tree_hash, first.tree_hash);
}

TEST_F(SnapshotTest, RecentlyModifiedFilesAreNotTrustedToTheCache) {
  // given: a file written just now (same timestamp tick as a later rewrite could be)
  std::ofstream(project_ + "/fresh.py") << "1\n";

  // when: staged twice
  snapshot_ok();
  StagedSnapshot second = snapshot_ok();

  // then: its content is read again rather than trusted on size and mtime
  EXPECT_EQ(second.files_read, 1u);
}

TEST_F(SnapshotTest, ObjectMissingFromTheStoreFallsBackToReadingTheFile) {
  // given: the cache knows a.py, but its object was collected
  write("a.py", "content\n");
  StagedSnapshot first = snapshot_ok();
  staging::remove_tree_at(AT_FDCWD, first.dir);
  staging::remove_tree_at(AT_FDCWD, staging_ + "/alice/.objects");

  // when
  StagedSnapshot second = snapshot_ok();

  // then
  EXPECT_EQ(second.files_read, 1u);
  EXPECT_EQ(read(second.dir + "/a.py"), "content\n");
}

TEST_F(SnapshotTest, CorruptStatCacheIsIgnored) {
  // given: garbage in every cache file
  write("a.py", "content\n");
  snapshot_ok();
  for (auto& e : fs::directory_iterator(cache_)) std::ofstream(e.path()) << "garbage";

  // when
  StagedSnapshot s = snapshot_ok();

  // then
  EXPECT_EQ(s.files_read, 1u);
  EXPECT_EQ(read(s.dir + "/a.py"), "content\n");
}

TEST_F(SnapshotTest, SnapshotIsReadOnly) {
  write("a.py", "a\n");
  write("run.sh", "r\n", 0755);
  write("deep/er/c.py", "c\n");

  StagedSnapshot s = snapshot_ok();

  EXPECT_EQ(lstat_of(s.dir).st_mode & 07777, 0555u);
  EXPECT_EQ(lstat_of(s.dir + "/deep").st_mode & 07777, 0555u);
  EXPECT_EQ(lstat_of(s.dir + "/deep/er").st_mode & 07777, 0555u);
  EXPECT_EQ(lstat_of(s.dir + "/a.py").st_mode & 07777, 0444u);
  EXPECT_EQ(lstat_of(s.dir + "/run.sh").st_mode & 07777, 0555u);
  // The per-user dir is private (0700 narrowed by the umask, 022 here).
  EXPECT_EQ(lstat_of(staging_ + "/alice").st_mode & 07777, 0700u);
}

// Restores the process umask at the end of a test.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : old_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(old_); }

 private:
  mode_t old_;
};

TEST_F(SnapshotTest, ModesHonourTheUmaskAndNeverAddBitsForOthers) {
  // given: a umask that keeps everything from group and others
  ScopedUmask mask(077);
  write("a.py", "a\n");
  write("run.sh", "r\n", 0755);
  write("deep/c.py", "c\n");

  // when
  StagedSnapshot s = snapshot_ok();

  // then: read-only for the owner, nothing for anyone else
  EXPECT_EQ(lstat_of(s.dir).st_mode & 07777, 0500u);
  EXPECT_EQ(lstat_of(s.dir + "/deep").st_mode & 07777, 0500u);
  EXPECT_EQ(lstat_of(s.dir + "/a.py").st_mode & 07777, 0400u);
  EXPECT_EQ(lstat_of(s.dir + "/run.sh").st_mode & 07777, 0500u);
  EXPECT_EQ(lstat_of(staging_ + "/alice").st_mode & 07777, 0700u);
  EXPECT_EQ(lstat_of(staging_ + "/alice/.objects").st_mode & 07777, 0700u);
}

TEST_F(SnapshotTest, RefusesAUserDirThatOthersCanWriteAndWritesNothingThere) {
  // given: <staging>/alice made writable by everyone (as a squatter would)
  ASSERT_EQ(::mkdir((staging_ + "/alice").c_str(), 0700), 0);
  ASSERT_EQ(::chmod((staging_ + "/alice").c_str(), 0777), 0);
  write("a.py", "a\n");

  // when
  auto staged = snapshot(request());

  // then: refused, naming the path, its mode and the fix; nothing written
  ASSERT_FALSE(staged.ok());
  EXPECT_NE(staged.error().message.find(staging_ + "/alice is writable by group or others"),
            std::string::npos)
      << staged.error().message;
  EXPECT_NE(staged.error().message.find("mode 0777"), std::string::npos);
  EXPECT_NE(staged.error().message.find("chmod go-w " + staging_ + "/alice"), std::string::npos);
  EXPECT_TRUE(user_dir_entries().empty());
}

TEST_F(SnapshotTest, RefusesASymlinkAsTheUserDir) {
  // given: <staging>/alice is a symlink to a directory elsewhere
  std::string elsewhere = scratch_ + "/elsewhere";
  ASSERT_EQ(::mkdir(elsewhere.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(elsewhere.c_str(), (staging_ + "/alice").c_str()), 0);
  write("a.py", "a\n");

  // when
  auto staged = snapshot(request());

  // then
  ASSERT_FALSE(staged.ok());
  EXPECT_NE(staged.error().message.find("is a symlink to " + elsewhere), std::string::npos)
      << staged.error().message;
  EXPECT_TRUE(fs::is_empty(elsewhere));
}

TEST_F(SnapshotTest, NameHasTimeRandomShaAndCodeLikeRunStaging) {
  const std::regex shape(R"(^\d{12}-[a-z0-9]{6}-([0-9a-f]{7}|nogit)-code$)");
  write("a.py", "a\n");
  StagedSnapshot outside = snapshot_ok();
  git_init_and_commit_all();
  StagedSnapshot inside = snapshot_ok();

  EXPECT_TRUE(std::regex_match(outside.name, shape)) << outside.name;
  EXPECT_TRUE(std::regex_match(inside.name, shape)) << inside.name;
  EXPECT_THAT(outside.name, ::testing::EndsWith("-nogit-code"));
  EXPECT_THAT(inside.name, ::testing::EndsWith("-" + inside.git.sha.substr(0, 7) + "-code"));
  EXPECT_EQ(inside.dir, fs::canonical(staging_).string() + "/alice/" + inside.name);
}

TEST_F(SnapshotTest, NameCollisionRetriesWithANewSuffix) {
  // given: the first name the random source gives is taken
  write("a.py", "a\n");
  SnapshotRequest r = request();
  int calls = 0;
  r.random_suffix = [&] { return ++calls == 1 ? std::string("aaaaaa") : std::string("bbbbbb"); };
  std::string taken = staging::snapshot_name(r.now, "aaaaaa", "nogit");
  fs::create_directories(staging_ + "/alice/" + taken + "/someone");

  // when
  auto s = snapshot(r);

  // then
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->name, staging::snapshot_name(r.now, "bbbbbb", "nogit"));
  EXPECT_TRUE(fs::exists(staging_ + "/alice/" + taken + "/someone"));
}

TEST_F(SnapshotTest, SizeLimitErrorListsTheLargestFilesAndWhatToDo) {
  // given: 1.5 KB of files against a 1 KB limit
  write("data/big.bin", std::string(900, 'x'));
  write("data/mid.bin", std::string(500, 'y'));
  write("main.py", std::string(100, 'z'));
  SnapshotRequest r = request();
  r.size_limit = 1000;

  // when
  auto s = snapshot(r);

  // then
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("900 B  data/big.bin"));
  EXPECT_THAT(s.error().message, HasSubstr("500 B  data/mid.bin"));
  EXPECT_THAT(s.error().message, HasSubstr(".tpurunignore"));
  EXPECT_THAT(s.error().message, HasSubstr("Datasets do not belong in a code snapshot"));
  EXPECT_THAT(user_dir_entries(), ElementsAre());
}

TEST_F(SnapshotTest, CancelLeavesNothingBehind) {
  // given: a cancel that fires once the temp dir is about to be made
  for (int i = 0; i < 50; ++i) write("f" + std::to_string(i) + ".py", std::to_string(i));
  std::atomic<bool> flag{false};
  SnapshotRequest r = request();
  r.random_suffix = [&] {
    flag = true;
    return staging::random_suffix();
  };

  // when
  auto s = create_snapshot(r, processes_, CancelToken(&flag));

  // then: an error, no snapshot and no temp dir (objects may stay)
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("cancelled"));
  EXPECT_THAT(user_dir_entries(), ElementsAre(".objects"));
}

TEST_F(SnapshotTest, ConcurrentSnapshotsBothSucceedWithDistinctNames) {
  // given: two threads staging the same project at the same second, whose
  // first random suffix is the same (so their temp dirs collide too)
  for (int i = 0; i < 200; ++i)
    write("d" + std::to_string(i % 7) + "/f" + std::to_string(i), std::to_string(i % 13));
  SnapshotRequest r = request();
  r.random_suffix = [] {
    thread_local int calls = 0;
    return ++calls == 1 ? std::string("same00") : staging::random_suffix();
  };
  // Both publish only once both have built their tree: neither can find the
  // other's finished snapshot and reuse it (a thread started late on a busy
  // machine would). Bounded, so that one that fails early does not hang the other.
  std::mutex m;
  std::condition_variable cv;
  int at_gate = 0;
  r.publish_gate = [&] {
    std::unique_lock lock(m);
    ++at_gate;
    cv.notify_all();
    return cv.wait_for(lock, std::chrono::seconds(60), [&] { return at_gate == 2; });
  };

  // when
  std::optional<Result<StagedSnapshot, StageError>> a, b;
  SystemProcessRunner processes_b;
  std::thread other([&] { b.emplace(create_snapshot(r, processes_b, CancelToken())); });
  a.emplace(create_snapshot(r, processes_, CancelToken()));
  other.join();

  // then
  ASSERT_TRUE(a->ok()) << a->error().message;
  ASSERT_TRUE(b->ok()) << b->error().message;
  EXPECT_NE((*a)->name, (*b)->name);
  EXPECT_EQ((*a)->tree_hash, (*b)->tree_hash);
  EXPECT_EQ(paths_in((*a)->dir).size(), 200u);
  EXPECT_EQ(paths_in((*b)->dir).size(), 200u);
}

TEST_F(SnapshotTest, ProgressReportsTheEndWithAllFilesAndBytes) {
  write("a.py", "12345");
  write("b.py", "678");
  std::vector<SnapshotProgress> seen;

  auto s = create_snapshot(request(), processes_, CancelToken(),
                           [&](const SnapshotProgress& p) { seen.push_back(p); });

  ASSERT_TRUE(s.ok());
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().files_done, 2u);
  EXPECT_EQ(seen.back().files_total, 2u);
  EXPECT_EQ(seen.back().bytes_done, 8u);
  EXPECT_EQ(seen.back().bytes_total, 8u);
}

}  // namespace
}  // namespace tpurun::testing_staging

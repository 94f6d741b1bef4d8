// Which files a snapshot holds: git's view in a repository, a walk outside.
#include <gmock/gmock.h>

#include "staging_fixture.hpp"

namespace tpurun::testing_staging {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using FileListTest = StagingTest;

TEST_F(FileListTest, GitRepoStagesTrackedAndUntrackedButNotIgnoredOrDeleted) {
  // given: a repo with a tracked file, a deleted tracked file, an untracked
  // file and a git-ignored file
  write(".gitignore", "*.log\n");
  write("train.py", "print(1)\n");
  write("gone.py", "x\n");
  git_init_and_commit_all();
  fs::remove(project_ + "/gone.py");
  write("new.py", "y\n");
  write("debug.log", "noise\n");

  // when
  StagedSnapshot s = snapshot_ok();

  // then
  EXPECT_THAT(paths_in(s.dir), ElementsAre(".gitignore", "new.py", "train.py"));
  EXPECT_TRUE(s.git.is_repo);
  EXPECT_EQ(s.git.sha.size(), 40u);
  EXPECT_EQ(s.git.branch, "main");
  EXPECT_TRUE(s.git.dirty);
  EXPECT_THAT(s.git.diff, HasSubstr("gone.py"));
}

TEST_F(FileListTest, TpurunignoreFiltersGitFilesWithNegation) {
  // given: .tpurunignore drops data/ and *.bin, but re-includes keep.bin
  write("main.py", "m\n");
  write("data/a.txt", "a\n");
  write("w.bin", "w\n");
  write("keep.bin", "k\n");
  write("sub/x.bin", "x\n");
  write(".tpurunignore", "# big stuff\n/data/\n*.bin\n!keep.bin\n");
  git_init_and_commit_all();

  // when
  StagedSnapshot s = snapshot_ok();

  // then
  EXPECT_THAT(paths_in(s.dir), ElementsAre(".tpurunignore", "keep.bin", "main.py"));
  EXPECT_FALSE(s.git.dirty);
  EXPECT_TRUE(s.git.diff.empty());
}

TEST_F(FileListTest, CleanRepoIsNotDirtyAndModifiedFileShowsInBinarySafeDiff) {
  // given: a committed binary file, then changed
  write("blob.bin", std::string("\0\1\2", 3));
  git_init_and_commit_all();
  EXPECT_FALSE(snapshot_ok().git.dirty);
  write("blob.bin", std::string("\0\1\3\4", 4));

  // when
  StagedSnapshot s = snapshot_ok();

  // then: a --binary diff, which git apply can replay
  EXPECT_TRUE(s.git.dirty);
  EXPECT_THAT(s.git.diff, HasSubstr("GIT binary patch"));
}

TEST_F(FileListTest, NestedRepositoryIsSkippedWithANote) {
  // given: an untracked nested git repository
  write("main.py", "m\n");
  git_init_and_commit_all();
  write("vendor/lib/x.py", "x\n");
  ASSERT_EQ(processes_.run({"git", "-C", project_ + "/vendor/lib", "init", "-q"}).exit_code, 0);

  // when
  StagedSnapshot s = snapshot_ok();

  // then
  EXPECT_THAT(paths_in(s.dir), ElementsAre("main.py"));
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_THAT(s.notes[0], HasSubstr("vendor/lib"));
}

TEST_F(FileListTest, OutsideGitWalksAndSkipsCachesAndIgnoredFiles) {
  // given: no repo; clutter a walk must skip, and a .tpurunignore
  write("main.py", "m\n");
  write("pkg/mod.py", "p\n");
  write("pkg/__pycache__/mod.cpython-311.pyc", "c\n");
  write("old.pyc", "c\n");
  write(".git/HEAD", "ref\n");
  write(".ipynb_checkpoints/n.ipynb", "{}\n");
  write("out/ckpt", "big\n");
  write(".tpurunignore", "out/\n");

  // when
  StagedSnapshot s = snapshot_ok();

  // then
  EXPECT_THAT(paths_in(s.dir), ElementsAre(".tpurunignore", "main.py", "pkg/mod.py"));
  EXPECT_FALSE(s.git.is_repo);
  EXPECT_THAT(s.name, ::testing::EndsWith("-nogit-code"));
}

TEST_F(FileListTest, ExecutableBitAndSymlinksAreKeptAndNeverFollowed) {
  // given: a script, a relative symlink and one pointing out of the tree
  write("run.sh", "#!/bin/sh\n", 0755);
  write("lib/a.py", "a\n");
  fs::create_directory_symlink("lib", project_ + "/lib_link");
  fs::create_symlink("/etc/passwd", project_ + "/outside");

  // when
  StagedSnapshot s = snapshot_ok();

  // then
  EXPECT_TRUE(lstat_of(s.dir + "/run.sh").st_mode & S_IXUSR);
  EXPECT_FALSE(lstat_of(s.dir + "/lib/a.py").st_mode & S_IXUSR);
  EXPECT_TRUE(S_ISLNK(lstat_of(s.dir + "/lib_link").st_mode));
  EXPECT_EQ(fs::read_symlink(s.dir + "/lib_link"), "lib");
  EXPECT_TRUE(S_ISLNK(lstat_of(s.dir + "/outside").st_mode));
  EXPECT_EQ(fs::read_symlink(s.dir + "/outside"), "/etc/passwd");
  EXPECT_THAT(paths_in(s.dir), ElementsAre("lib/a.py", "lib_link", "outside", "run.sh"));
}

TEST_F(FileListTest, StagingRootInsideTheProjectIsLeftOut) {
  // given: snapshots kept inside the project directory itself
  write("main.py", "m\n");
  SnapshotRequest r = request();
  r.staging_root = project_ + "/staging[1]";
  fs::create_directories(r.staging_root);
  ASSERT_TRUE(snapshot(r).ok());

  // when: staged again, with the first snapshot now inside the tree
  auto s = snapshot(r);

  // then
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_THAT(paths_in(s->dir), ElementsAre("main.py"));
  EXPECT_THAT(s->notes, ElementsAre(HasSubstr("staging[1]")));
}

TEST_F(FileListTest, ProjectIgnoredByAnEnclosingRepositoryIsAnErrorNotAnEmptySnapshot) {
  // given: a repository around the project that ignores everything
  write("main.py", "m\n");
  ASSERT_EQ(processes_.run({"git", "-C", scratch_, "init", "-q"}).exit_code, 0);
  std::ofstream(scratch_ + "/.gitignore") << "*\n";

  // when
  auto s = snapshot(request());

  // then
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("git lists no files"));
  EXPECT_THAT(user_dir_entries(), ElementsAre());
}

}  // namespace
}  // namespace tpurun::testing_staging

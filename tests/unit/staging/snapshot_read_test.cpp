// read_snapshot: a published snapshot read back (what the watcher pushes
// again to a recreated TPU VM) has the stage's own tree hash and entries.
#include <gmock/gmock.h>

#include "staging_fixture.hpp"

namespace tpurun::testing_staging {
namespace {

class SnapshotReadTest : public StagingTest {};

TEST_F(SnapshotReadTest, ASnapshotReadBackIsWhatWasStaged) {
  write("train.py", "print('hi')\n");
  write("run.sh", "#!/bin/sh\n", 0755);
  write("odd name (1).txt", "odd\n");
  write("pkg/__pycache__/m.pyc", "tracked bytecode\n");  // a walk's default skips this; git tracks it here
  write("empty", "");
  fs::create_symlink("train.py", fs::path(project_) / "link");
  git_init_and_commit_all();
  const StagedSnapshot staged = snapshot_ok();

  auto read = read_snapshot(staged.dir, CancelToken());
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->tree_hash, staged.tree_hash);
  EXPECT_EQ(read->name, staged.name);
  EXPECT_EQ(read->files, staged.files);
  ASSERT_EQ(read->entries.size(), staged.entries.size());
  for (size_t i = 0; i < staged.entries.size(); ++i) {
    EXPECT_EQ(read->entries[i].path, staged.entries[i].path);
    EXPECT_EQ(read->entries[i].object, staged.entries[i].object);
    EXPECT_EQ(read->entries[i].link_target, staged.entries[i].link_target);
    EXPECT_EQ(read->entries[i].executable, staged.entries[i].executable);
  }
}

TEST_F(SnapshotReadTest, AMissingSnapshotIsAClearError) {
  auto read = read_snapshot(staging_ + "/alice/gone-code", CancelToken());
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.error().message, ::testing::HasSubstr("cannot open the snapshot " + staging_ + "/alice/gone-code"));
}

}  // namespace
}  // namespace tpurun::testing_staging

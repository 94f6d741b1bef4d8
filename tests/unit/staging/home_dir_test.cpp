// Staging a home directory instead of a project: keys, credentials, shell
// histories and tpurun's own files stay home, whatever .tpurunignore says,
// and the stage says why (issue 37: `stage` from ~ shipped ~/.ssh).
#include <gmock/gmock.h>

#include "staging_fixture.hpp"

namespace tpurun::testing_staging {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using HomeDirTest = StagingTest;

TEST_F(HomeDirTest, AHomeDirLeavesItsSecretsOutAndSaysSo) {
  // given: a home dir with a key, cloud credentials, history, tpurun's logs,
  // and a .tpurunignore that tries to take the key back in
  write("train.py", "print('hi')\n");
  write(".ssh/id_ed25519", "PRIVATE KEY\n", 0600);
  write(".config/gcloud/credentials.db", "token\n");
  write(".config/app.toml", "x = 1\n");
  write(".bash_history", "export TOKEN=...\n");
  write(".tpurun/logs/alice/p/run/worker0.log", "old logs\n");
  write(".tpurunignore", "!.ssh/\n");
  SnapshotRequest r = request();
  r.home_dir = project_;

  // when
  auto staged = snapshot(r);

  // then: only what is not a secret; the note names what was left out
  ASSERT_TRUE(staged.ok()) << staged.error().message;
  EXPECT_THAT(paths_in(staged->dir), ElementsAre(".config/app.toml", ".tpurunignore", "train.py"));
  std::string notes;
  for (const std::string& note : staged->notes) notes += note + "\n";
  EXPECT_THAT(notes, HasSubstr("this is your home directory, not a project"));
  EXPECT_THAT(notes, HasSubstr(".ssh, .config/gcloud, .tpurun"));
}

TEST_F(HomeDirTest, AProjectDirKeepsItsDotDirs) {
  // given: a project (not the home dir) with a .ssh of its own, e.g. fixtures
  write("train.py", "print('hi')\n");
  write(".ssh/config", "Host x\n");

  // when
  StagedSnapshot s = snapshot_ok();

  // then: everything is staged, and nothing is said about a home dir
  EXPECT_THAT(paths_in(s.dir), ElementsAre(".ssh/config", "train.py"));
  for (const std::string& note : s.notes) EXPECT_THAT(note, ::testing::Not(HasSubstr("home directory")));
}

}  // namespace
}  // namespace tpurun::testing_staging

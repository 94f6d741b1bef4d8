// collect_garbage: old snapshots go, new ones and other users' stay.
#include <gmock/gmock.h>

#include "staging/snapshot_name.hpp"
#include "staging_fixture.hpp"
#include "tpurun/staging/gc.hpp"
#include "tpurun/staging/snapshot_pin.hpp"

namespace tpurun::testing_staging {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

class GcTest : public StagingTest {
 protected:
  // A snapshot as if made `age` ago: the time in its name and its mtime.
  StagedSnapshot stage_aged(std::chrono::hours age) {
    SnapshotRequest r = request();
    r.now = std::chrono::system_clock::now() - age;
    auto s = snapshot(r);
    EXPECT_TRUE(s.ok());
    backdate(s->dir, std::chrono::duration_cast<std::chrono::seconds>(age));
    return *s;
  }

  GcRequest gc_request(bool dry_run = false) const {
    GcRequest r;
    r.staging_root = staging_;
    r.user = "alice";
    r.older_than = std::chrono::hours(24 * 14);
    r.now = std::chrono::system_clock::now();
    r.dry_run = dry_run;
    return r;
  }
};

TEST_F(GcTest, RemovesOldSnapshotsAndTheirOnlyObjectsKeepsNewOnes) {
  // given: an old snapshot with a file only it has, and a new one
  write("shared.py", "shared\n");
  write("old_only.py", "old\n");
  StagedSnapshot old = stage_aged(std::chrono::hours(24 * 30));
  fs::remove(project_ + "/old_only.py");
  StagedSnapshot fresh = stage_aged(std::chrono::hours(1));

  // when
  GcReport report = collect_garbage(gc_request());

  // then
  EXPECT_THAT(report.errors, IsEmpty());
  EXPECT_THAT(report.snapshots_removed, ElementsAre(old.name));
  EXPECT_EQ(report.objects_removed, 1u);
  EXPECT_EQ(report.bytes_freed, 4u);
  EXPECT_THAT(user_dir_entries(), UnorderedElementsAre(".objects", fresh.name));
  EXPECT_EQ(read(fresh.dir + "/shared.py"), "shared\n");
  // and the index of snapshots by tree keeps only the fresh one's link
  std::vector<std::string> links;
  for (const auto& e : fs::directory_iterator(staging_ + "/alice")) {
    if (e.path().filename().string().starts_with(".tree-")) links.push_back(fs::read_symlink(e.path()).string());
  }
  EXPECT_THAT(links, ElementsAre(fresh.name));
}

TEST_F(GcTest, DryRunRemovesNothingAndReportsTheSame) {
  // given
  write("shared.py", "shared\n");
  write("old_only.py", "old\n");
  StagedSnapshot old = stage_aged(std::chrono::hours(24 * 30));
  fs::remove(project_ + "/old_only.py");
  StagedSnapshot fresh = stage_aged(std::chrono::hours(1));
  auto before = user_dir_entries();

  // when
  GcReport dry = collect_garbage(gc_request(true));

  // then: nothing gone, and the real run agrees with the dry one
  EXPECT_EQ(user_dir_entries(), before);
  EXPECT_EQ(read(old.dir + "/old_only.py"), "old\n");
  GcReport real = collect_garbage(gc_request());
  EXPECT_EQ(dry.snapshots_removed, real.snapshots_removed);
  EXPECT_EQ(dry.objects_removed, real.objects_removed);
  EXPECT_EQ(dry.bytes_freed, real.bytes_freed);
}

TEST_F(GcTest, NeverTouchesOtherUsersOrFollowsSymlinks) {
  // given: another user's old snapshot, and a symlink with a snapshot's name
  // in alice's dir pointing into it
  write("a.py", "a\n");
  stage_aged(std::chrono::hours(1));
  std::string other_name = staging::snapshot_name(
      std::chrono::system_clock::now() - std::chrono::hours(24 * 60), "zzzzzz", "nogit");
  std::string other = staging_ + "/bob/" + other_name;
  fs::create_directories(other);
  std::ofstream(other + "/train.py") << "bob's\n";
  backdate(other, std::chrono::hours(24 * 60));
  std::string trap = staging::snapshot_name(
      std::chrono::system_clock::now() - std::chrono::hours(24 * 60), "trap00", "nogit");
  fs::create_directory_symlink(other, staging_ + "/alice/" + trap);
  ::utimensat(AT_FDCWD, (staging_ + "/alice/" + trap).c_str(), nullptr, AT_SYMLINK_NOFOLLOW);

  // when
  GcReport report = collect_garbage(gc_request());

  // then
  EXPECT_THAT(report.snapshots_removed, IsEmpty());
  EXPECT_EQ(read(other + "/train.py"), "bob's\n");
  EXPECT_TRUE(fs::is_symlink(staging_ + "/alice/" + trap));
}

TEST_F(GcTest, StaleTempDirsOfDeadStagingsGoFreshOnesStay) {
  // given: a temp dir from two hours ago, and one being built right now
  write("a.py", "a\n");
  stage_aged(std::chrono::hours(1));
  std::string stale = staging_ + "/alice/.tmp-x-1";
  std::string live = staging_ + "/alice/.tmp-y-2";
  fs::create_directories(stale + "/sub");
  ::chmod((stale + "/sub").c_str(), 0555);
  backdate(stale, std::chrono::hours(2));
  fs::create_directories(live);

  // when
  GcReport report = collect_garbage(gc_request());

  // then
  EXPECT_THAT(report.temps_removed, ElementsAre(".tmp-x-1"));
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
}

TEST_F(GcTest, KeepsASnapshotThatARunMayStillUseAndSaysWhich) {
  // given: two old snapshots, one used by a run that is still going
  write("a.py", "a\n");
  StagedSnapshot used = stage_aged(std::chrono::hours(24 * 30));
  write("b.py", "b\n");  // another tree: an unchanged one would reuse the first snapshot
  StagedSnapshot unused = stage_aged(std::chrono::hours(24 * 30));
  GcRequest request = gc_request();
  request.in_use[used.name] = {{"R1", "running"}, {"R2", "restarting"}};

  // when
  GcReport report = collect_garbage(request);

  // then: only the unused one goes; the kept one names its runs
  EXPECT_THAT(report.snapshots_removed, ElementsAre(unused.name));
  ASSERT_EQ(report.kept.size(), 1u);
  EXPECT_EQ(report.kept[0].name, used.name);
  ASSERT_EQ(report.kept[0].runs.size(), 2u);
  EXPECT_EQ(report.kept[0].runs[1].run_id, "R2");
  EXPECT_EQ(report.kept[0].runs[1].state, "restarting");
  EXPECT_EQ(read(used.dir + "/a.py"), "a\n");
}

TEST_F(GcTest, KeepsASnapshotThatAStagePinsWhateverTheCutoff) {
  // given: an old snapshot that a stage is sending (it pins it), and gc --older-than 0s
  write("a.py", "a\n");
  StagedSnapshot sent = stage_aged(std::chrono::hours(24 * 30));
  GcRequest request = gc_request();
  request.older_than = std::chrono::seconds(0);
  {
    const SnapshotPin pin(sent.dir);
    ASSERT_TRUE(pin.held());

    // when
    GcReport report = collect_garbage(request);

    // then: kept, with no run to name yet
    EXPECT_THAT(report.snapshots_removed, IsEmpty());
    ASSERT_EQ(report.kept.size(), 1u);
    EXPECT_EQ(report.kept[0].name, sent.name);
    EXPECT_THAT(report.kept[0].runs, IsEmpty());
    EXPECT_EQ(read(sent.dir + "/a.py"), "a\n");
  }
  // and once the stage lets it go, it is old enough to go
  EXPECT_THAT(collect_garbage(request).snapshots_removed, ElementsAre(sent.name));
}

TEST_F(GcTest, APinOfASnapshotThatGcRemovedSaysItIsGone) {
  // given: a snapshot gc removed before the stage could pin it
  write("a.py", "a\n");
  StagedSnapshot old = stage_aged(std::chrono::hours(24 * 30));
  ASSERT_THAT(collect_garbage(gc_request()).snapshots_removed, ElementsAre(old.name));

  // when
  const SnapshotPin pin(old.dir);

  // then
  EXPECT_FALSE(pin.held());
  EXPECT_TRUE(pin.gone());
}

TEST_F(GcTest, RefusesAUserDirOfAnotherOwnerOrModeAndRemovesNothing) {
  // given: an old snapshot, then the user dir made writable by everyone
  write("a.py", "a\n");
  StagedSnapshot old = stage_aged(std::chrono::hours(24 * 30));
  ASSERT_EQ(::chmod((staging_ + "/alice").c_str(), 0777), 0);

  // when
  GcReport report = collect_garbage(gc_request());

  // then
  EXPECT_THAT(report.refused, ::testing::HasSubstr("chmod go-w " + staging_ + "/alice"));
  EXPECT_THAT(report.snapshots_removed, IsEmpty());
  EXPECT_TRUE(fs::exists(old.dir + "/a.py"));
}

TEST_F(GcTest, MissingUserDirIsNothingToDo) {
  GcReport report = collect_garbage(gc_request());
  EXPECT_THAT(report.snapshots_removed, IsEmpty());
  EXPECT_THAT(report.errors, IsEmpty());
}

}  // namespace
}  // namespace tpurun::testing_staging

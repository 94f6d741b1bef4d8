// Deferred object-store links (SnapshotRequest::adopt_dir, adopt_pending):
// what a stage leaves out, what the adopter links, what it never touches.
#include <gmock/gmock.h>
#include <sys/file.h>

#include <atomic>

#include "staging/adoption.hpp"
#include "staging_fixture.hpp"
#include "tpurun/staging/adopt_pending.hpp"

namespace tpurun::testing_staging {
namespace {

using ::testing::HasSubstr;
using staging::PendingFile;
using staging::PendingList;

class AdoptionTest : public StagingTest {
 protected:
  SnapshotRequest deferred(const std::string& dir) const {
    SnapshotRequest r = request();
    r.adopt_dir = dir;
    return r;
  }
  StagedSnapshot stage_deferred(const std::string& dir) {
    auto staged = snapshot(deferred(dir));
    EXPECT_TRUE(staged.ok()) << (staged.ok() ? "" : staged.error().message);
    return staged.ok() ? *staged : StagedSnapshot{};
  }
  static AdoptReport adopt(const std::string& dir, AdoptBusy busy = AdoptBusy::skip) {
    return adopt_pending(dir, busy, CancelToken());
  }
  std::size_t objects() const {
    std::size_t n = 0;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(staging_ + "/alice/.objects", ec);
         it != fs::recursive_directory_iterator(); ++it) {
      n += it->is_regular_file() ? 1 : 0;
    }
    return n;
  }
  std::string adopt_dir() const { return scratch_ + "/cache/tpurun/adopt"; }  // made by the first stage
  // Pending lists waiting in adopt_dir() (temp files start with a dot).
  bool has_pending_adoptions() const {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(adopt_dir(), ec)) {
      const std::string name = entry.path().filename().string();
      if (name.front() != '.' && name.ends_with(".list")) return true;
    }
    return false;
  }
};

TEST_F(AdoptionTest, ADeferredStageLeavesItsNewFilesOutOfTheStoreAndListsThem) {
  // given
  write("a.py", "a\n");
  write("bin/run.sh", "#!/bin/sh\n", 0755);

  // when
  StagedSnapshot s = stage_deferred(adopt_dir());

  // then: the snapshot is whole; the store has nothing yet; a list waits
  EXPECT_EQ(read(s.dir + "/a.py"), "a\n");
  EXPECT_EQ(lstat_of(s.dir + "/a.py").st_nlink, 1u);
  EXPECT_EQ(objects(), 0u);
  EXPECT_TRUE(s.adoption_pending);
  EXPECT_TRUE(has_pending_adoptions());
  EXPECT_TRUE(fs::exists(adopt_dir() + "/" + s.name + ".list"));
}

TEST_F(AdoptionTest, AdoptingLinksTheFilesIntoTheStoreAndRemovesTheList) {
  // given
  write("a.py", "a\n");
  write("bin/run.sh", "#!/bin/sh\n", 0755);
  StagedSnapshot s = stage_deferred(adopt_dir());

  // when
  AdoptReport report = adopt(adopt_dir());

  // then: both files are their objects now (the executable one under ".x")
  EXPECT_TRUE(report.errors.empty()) << report.errors.front();
  EXPECT_EQ(report.lists, 1u);
  EXPECT_EQ(report.stored, 2u);
  EXPECT_EQ(lstat_of(s.dir + "/a.py").st_nlink, 2u);
  EXPECT_EQ(lstat_of(s.dir + "/bin/run.sh").st_nlink, 2u);
  EXPECT_EQ(objects(), 2u);
  std::size_t executables = 0;
  for (auto& e : fs::recursive_directory_iterator(staging_ + "/alice/.objects"))
    executables += e.path().extension() == ".x" ? 1 : 0;
  EXPECT_EQ(executables, 1u);
  EXPECT_FALSE(has_pending_adoptions());
}

TEST_F(AdoptionTest, TheNextStageFinishesWhatIsPendingAndLinksInsteadOfCopying) {
  // given: a deferred stage nobody adopted, then one file changed
  write("a.py", "version 1\n");
  write("b.py", "unchanged\n");
  StagedSnapshot first = stage_deferred(adopt_dir());
  write("a.py", "version 2\n");

  // when
  StagedSnapshot second = stage_deferred(adopt_dir());

  // then: b.py is the first snapshot's file, through the store; only a.py was read
  EXPECT_EQ(second.files_read, 1u);
  EXPECT_EQ(lstat_of(second.dir + "/b.py").st_ino, lstat_of(first.dir + "/b.py").st_ino);
  EXPECT_EQ(lstat_of(first.dir + "/b.py").st_nlink, 3u);
  EXPECT_EQ(read(second.dir + "/a.py"), "version 2\n");
  // and the new a.py waits in its own list
  AdoptReport report = adopt(adopt_dir());
  EXPECT_EQ(report.lists, 1u);
  EXPECT_EQ(report.stored, 1u);
}

TEST_F(AdoptionTest, ContentReadAgainIsLinkedFromTheStoreRatherThanCopied) {
  // given: a stored snapshot, then a.py written again with the same bytes
  // (its stamp changed, so it is read again) and b.py changed
  write("a.py", "same bytes\n");
  write("b.py", "version 1\n");
  StagedSnapshot first = stage_deferred(adopt_dir());
  adopt(adopt_dir());
  write("a.py", "same bytes\n");
  ::chmod((project_ + "/a.py").c_str(), 0644);  // a new ctime, for certain
  write("b.py", "version 2\n");

  // when
  StagedSnapshot second = stage_deferred(adopt_dir());

  // then: a.py was read, found in the store and linked; only b.py waits
  EXPECT_EQ(second.files_read, 2u);
  EXPECT_EQ(lstat_of(second.dir + "/a.py").st_ino, lstat_of(first.dir + "/a.py").st_ino);
  AdoptReport report = adopt(adopt_dir());
  EXPECT_EQ(report.stored, 1u);
  EXPECT_EQ(report.kept, 0u);
}

TEST_F(AdoptionTest, AFileOfAPublishedSnapshotIsNeverReplacedWhenItsObjectExists) {
  // given: two snapshots of the same content, each deferred into its own list
  write("a.py", "same\n");
  StagedSnapshot first = stage_deferred(scratch_ + "/adopt-1");
  write("b.py", "another file, so the tree differs\n");
  StagedSnapshot second = stage_deferred(scratch_ + "/adopt-2");
  const ino_t second_inode = lstat_of(second.dir + "/a.py").st_ino;
  ASSERT_NE(second_inode, lstat_of(first.dir + "/a.py").st_ino);

  // when: the first is adopted, then the second
  adopt(scratch_ + "/adopt-1");
  AdoptReport report = adopt(scratch_ + "/adopt-2");

  // then: the second keeps its own copy (a worker may have it open), unshared
  EXPECT_EQ(report.kept, 1u);
  EXPECT_EQ(report.stored, 1u);  // b.py
  EXPECT_EQ(lstat_of(second.dir + "/a.py").st_ino, second_inode);
  EXPECT_EQ(lstat_of(second.dir + "/a.py").st_nlink, 1u);
  EXPECT_EQ(read(second.dir + "/a.py"), "same\n");
}

TEST_F(AdoptionTest, AListWhoseSnapshotIsGoneIsDroppedQuietly) {
  // given: the snapshot was collected before its files were adopted
  write("a.py", "a\n");
  StagedSnapshot s = stage_deferred(adopt_dir());
  staging::remove_tree_at(AT_FDCWD, s.dir);

  // when
  AdoptReport report = adopt(adopt_dir());

  // then
  EXPECT_TRUE(report.errors.empty());
  EXPECT_EQ(report.gone, 1u);
  EXPECT_EQ(report.lists, 1u);
  EXPECT_FALSE(has_pending_adoptions());
}

TEST_F(AdoptionTest, AnUnreadableListIsGivenUpWithItsNameAndRemoved) {
  // given
  fs::create_directories(adopt_dir());
  std::ofstream(adopt_dir() + "/240101000000-abcdef-nogit-code.list") << "not a list";

  // when
  AdoptReport report = adopt(adopt_dir());

  // then
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_THAT(report.errors[0], HasSubstr("240101000000-abcdef-nogit-code.list"));
  EXPECT_THAT(report.errors[0], HasSubstr("not a pending list"));
  EXPECT_FALSE(has_pending_adoptions());
}

TEST_F(AdoptionTest, TheNextStageSaysWhichListItGaveUp) {
  // given
  write("a.py", "a\n");
  fs::create_directories(adopt_dir());
  std::ofstream(adopt_dir() + "/240101000000-abcdef-nogit-code.list") << "not a list";

  // when
  StagedSnapshot s = stage_deferred(adopt_dir());

  // then: staged all the same, with a note naming the list
  EXPECT_EQ(read(s.dir + "/a.py"), "a\n");
  ASSERT_FALSE(s.notes.empty());
  EXPECT_THAT(s.notes[0], HasSubstr("object store: "));
  EXPECT_THAT(s.notes[0], HasSubstr("240101000000-abcdef-nogit-code.list"));
}

TEST_F(AdoptionTest, AListNamingSomethingOtherThanASnapshotIsRefused) {
  // given: a list whose "snapshot" is some other directory of the user's
  fs::create_directories(staging_ + "/alice/notes");
  PendingList list{staging_, "alice", "notes", {PendingFile{"a.py", {1, 2}, false}}};
  ASSERT_EQ(staging::write_pending_list(adopt_dir(), list), "");

  // when
  AdoptReport report = adopt(adopt_dir());

  // then
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_THAT(report.errors[0], HasSubstr("names no snapshot"));
  EXPECT_EQ(report.stored, 0u);
}

TEST_F(AdoptionTest, AListAnotherAdopterHoldsIsSkippedOrWaitedForUntilCancelled) {
  // given: a pending list locked by another process
  write("a.py", "a\n");
  StagedSnapshot s = stage_deferred(adopt_dir());
  UniqueFd held(::open((adopt_dir() + "/" + s.name + ".list").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_EQ(::flock(held.get(), LOCK_EX), 0);

  // when: one adopter skips it, one waits and is cancelled
  AdoptReport skipped = adopt(adopt_dir());
  std::atomic<bool> stop{true};
  AdoptReport waited = adopt_pending(adopt_dir(), AdoptBusy::wait, CancelToken(&stop));

  // then: the list is untouched, for its holder
  EXPECT_EQ(skipped.busy, 1u);
  EXPECT_EQ(skipped.stored + waited.stored, 0u);
  EXPECT_TRUE(has_pending_adoptions());
  held.reset();
  EXPECT_EQ(adopt(adopt_dir()).stored, 1u);
}

TEST(PendingListTest, RoundTripsAnyPathAndRefusesPathsThatLeaveTheSnapshot) {
  PendingList list{"/srv/nfs/staging", "alice", "240101000000-abcdef-nogit-code",
                   {PendingFile{"dir/with\nnewline and space", {0x0123456789abcdefu, 42}, true},
                    PendingFile{"plain.py", {}, false}}};
  auto back = staging::decode_pending_list(staging::encode_pending_list(list));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->staging_root, list.staging_root);
  EXPECT_EQ(back->snapshot, list.snapshot);
  ASSERT_EQ(back->files.size(), 2u);
  EXPECT_EQ(back->files[0].path, "dir/with\nnewline and space");
  EXPECT_EQ(back->files[0].hash, list.files[0].hash);
  EXPECT_TRUE(back->files[0].executable);
  EXPECT_FALSE(back->files[1].executable);

  for (const char* bad : {"../x", "a/../../x", "/etc/passwd", "a//b", "./a", ""}) {
    PendingList hostile = list;
    hostile.files = {PendingFile{bad, {}, false}};
    EXPECT_FALSE(staging::decode_pending_list(staging::encode_pending_list(hostile))) << bad;
  }
  const std::string text = staging::encode_pending_list(list);
  EXPECT_FALSE(staging::decode_pending_list(text.substr(0, text.size() - 3))) << "cut short";
}

}  // namespace
}  // namespace tpurun::testing_staging

// open_shared_root / open_own_dir: only the caller's own directories, never
// through a symlink, never one that others can write.
#include "tpurun/util/safe_dir.hpp"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "fakes/temp_dir.hpp"

namespace tpurun {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using Kind = DirProblem::Kind;

class SafeDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = temp_.path() + "/root";
    ASSERT_EQ(::mkdir(root_.c_str(), 0755), 0);
  }
  std::string mode_of(const std::string& path) const {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0);
    char text[8];
    std::snprintf(text, sizeof text, "%04o", st.st_mode & 07777);
    return text;
  }

  testing::TempDir temp_;
  std::string root_;
};

TEST_F(SafeDirTest, CreatesThePerUserDirPrivateAndTheOnesBelowByTheUmask) {
  mode_t old = ::umask(022);
  auto dir = open_own_path(root_, {"alice", "proj"}, Create::if_missing);
  ::umask(old);

  ASSERT_TRUE(dir.ok()) << dir.error().message();
  EXPECT_EQ(dir->path, root_ + "/alice/proj");
  EXPECT_EQ(mode_of(root_ + "/alice"), "0700");
  EXPECT_EQ(mode_of(root_ + "/alice/proj"), "0755");
  // The fd is the directory itself, and can be read.
  EXPECT_EQ(::mkdirat(dir->fd.get(), "run", 0700), 0);
  EXPECT_TRUE(fs::is_directory(root_ + "/alice/proj/run"));
}

TEST_F(SafeDirTest, OpensAnExistingOwnDirAndTellsAMissingOneApart) {
  auto missing = open_own_path(root_, {"alice"}, Create::never);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, Kind::missing);
  EXPECT_FALSE(missing.error().parent);

  ASSERT_EQ(::mkdir((root_ + "/alice").c_str(), 0750), 0);
  EXPECT_TRUE(open_own_path(root_, {"alice"}, Create::never).ok());
}

TEST_F(SafeDirTest, ExclusiveCreateFailsWhenItExists) {
  auto user = open_own_path(root_, {"alice"}, Create::if_missing);
  ASSERT_TRUE(user.ok());
  ASSERT_TRUE(open_own_dir(*user, "run", Create::exclusive).ok());
  auto again = open_own_dir(*user, "run", Create::exclusive);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().err, EEXIST);
}

TEST_F(SafeDirTest, RefusesAnOwnDirThatGroupOrOthersCanWrite) {
  ASSERT_EQ(::mkdir((root_ + "/alice").c_str(), 0700), 0);
  ASSERT_EQ(::chmod((root_ + "/alice").c_str(), 0770), 0);

  auto dir = open_own_path(root_, {"alice"}, Create::if_missing);

  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().kind, Kind::writable);
  EXPECT_EQ(dir.error().mode, 0770u);
  EXPECT_THAT(dir.error().message(), HasSubstr(root_ + "/alice is writable by group or others"));
  EXPECT_THAT(dir.error().message(), HasSubstr("mode 0770"));
  EXPECT_THAT(dir.error().message(), HasSubstr("Fix it with: chmod go-w " + root_ + "/alice"));
}

TEST_F(SafeDirTest, RefusesASymlinkAndNamesItsTarget) {
  std::string elsewhere = temp_.path() + "/elsewhere";
  ASSERT_EQ(::mkdir(elsewhere.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(elsewhere.c_str(), (root_ + "/alice").c_str()), 0);

  auto dir = open_own_path(root_, {"alice"}, Create::if_missing);

  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().kind, Kind::symlink);
  EXPECT_THAT(dir.error().message(), HasSubstr("is a symlink to " + elsewhere));
  EXPECT_THAT(dir.error().message(), HasSubstr("rm " + root_ + "/alice"));
}

TEST_F(SafeDirTest, RefusesAFileWhereADirectoryBelongs) {
  temp_.write("root/alice", "not a dir\n");
  auto dir = open_own_path(root_, {"alice"}, Create::if_missing);
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().kind, Kind::not_directory);
  EXPECT_THAT(dir.error().message(), HasSubstr("is not a directory"));
}

TEST_F(SafeDirTest, RefusesADirOfAnotherOwnerWithTheAdminsFix) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user";
  ASSERT_EQ(::mkdir((root_ + "/alice").c_str(), 0777), 0);
  ASSERT_EQ(::chmod((root_ + "/alice").c_str(), 0777), 0);
  ASSERT_EQ(::chown((root_ + "/alice").c_str(), 65534, 65534), 0);

  auto dir = open_own_path(root_, {"alice"}, Create::if_missing);

  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().kind, Kind::foreign_owner);
  EXPECT_FALSE(dir.error().owner_is_caller);
  EXPECT_THAT(dir.error().message(), HasSubstr("mode 0777"));
  EXPECT_THAT(dir.error().message(), HasSubstr("An admin must remove it: sudo rm -rf " + root_ + "/alice"));
  // Under root_squash (Filestore's default) sudo on a client is nobody, and
  // nobody may not remove another user's dir from a sticky root: say where
  // root is root, and that the owner can remove it.
  EXPECT_THAT(dir.error().message(), HasSubstr("on the NFS server"));
  EXPECT_THAT(dir.error().message(), Not(HasSubstr("its owner")));  // nobody: root, squashed

  ASSERT_EQ(::chown((root_ + "/alice").c_str(), 4242, 4242), 0);
  dir = open_own_path(root_, {"alice"}, Create::if_missing);
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(dir.error().message(), HasSubstr("or uid 4242, its owner: rm -rf " + root_ + "/alice"));
}

TEST_F(SafeDirTest, ASymlinkAnotherUserPlantedNamesFixesThatWorkUnderRootSquash) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a symlink to another user";
  ASSERT_EQ(::symlink("/tmp", (root_ + "/alice").c_str()), 0);
  ASSERT_EQ(::lchown((root_ + "/alice").c_str(), 4242, 4242), 0);

  auto dir = open_own_path(root_, {"alice"}, Create::if_missing);

  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().kind, Kind::symlink);
  EXPECT_THAT(dir.error().message(), HasSubstr("an admin must remove it with: sudo rm " + root_ + "/alice"));
  EXPECT_THAT(dir.error().message(), HasSubstr("on the NFS server"));
  EXPECT_THAT(dir.error().message(), HasSubstr("or uid 4242, its owner: rm " + root_ + "/alice"));
}

TEST_F(SafeDirTest, ADirNamedAfterItsOwnerIsNeverCalledSquatted) {
  // USER=nobody while running as root: nobody's own dir must not be removed.
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user";
  ASSERT_EQ(::mkdir((root_ + "/nobody").c_str(), 0700), 0);
  ASSERT_EQ(::chown((root_ + "/nobody").c_str(), 65534, 65534), 0);

  auto dir = open_own_path(root_, {"nobody"}, Create::if_missing);

  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(dir.error().message(), HasSubstr("but tpurun runs as root: run tpurun as nobody"));
  EXPECT_THAT(dir.error().message(), ::testing::Not(HasSubstr("rm -rf")));
}

TEST_F(SafeDirTest, ARootWritableByOthersNeedsTheStickyBit) {
  ASSERT_EQ(::chmod(root_.c_str(), 0777), 0);
  auto open = open_own_path(root_, {"alice"}, Create::if_missing);
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.error().kind, Kind::writable);
  EXPECT_TRUE(open.error().parent);
  EXPECT_THAT(open.error().message(), HasSubstr("writable by others without the sticky bit"));
  EXPECT_THAT(open.error().message(), HasSubstr("chmod +t " + root_));
  EXPECT_FALSE(fs::exists(root_ + "/alice"));

  ASSERT_EQ(::chmod(root_.c_str(), 01777), 0);  // like /tmp: fine
  EXPECT_TRUE(open_own_path(root_, {"alice"}, Create::if_missing).ok());
}

TEST_F(SafeDirTest, AParentOfTheRootIsCheckedToo) {
  std::string deep = root_ + "/mnt/staging";
  fs::create_directories(deep);
  ASSERT_EQ(::chmod((root_ + "/mnt").c_str(), 0777), 0);
  auto open = open_shared_root(deep);
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.error().path, root_ + "/mnt");
}

TEST_F(SafeDirTest, SymlinksInTheConfiguredRootAreResolvedOnce) {
  std::string link = temp_.path() + "/link";
  ASSERT_EQ(::symlink(root_.c_str(), link.c_str()), 0);
  auto dir = open_own_path(link, {"alice"}, Create::if_missing);
  ASSERT_TRUE(dir.ok()) << dir.error().message();
  EXPECT_EQ(dir->path, link + "/alice");
  EXPECT_TRUE(fs::is_directory(root_ + "/alice"));
}

TEST_F(SafeDirTest, AMissingRootSaysSo) {
  auto open = open_shared_root(root_ + "/nope");
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.error().kind, Kind::missing);
  EXPECT_TRUE(open.error().parent);
}

}  // namespace
}  // namespace tpurun

namespace tpurun {
namespace {

// NFS root_squash: a root made by an admin through a client belongs to
// nobody; it counts like root's. A share root writable by all without the
// sticky bit (the seeds' `chmod go+rw`) is refused with `chmod +t` and where
// that works.
TEST(SafeDirSquashTest, ANobodyOwnedStickyRootCountsLikeRootsAndAWorldWritableOneSaysWhereToFixIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown";
  testing::TempDir temp;
  const std::string share = temp.path() + "/share", root = share + "/tpurun";
  ASSERT_EQ(::mkdir(share.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(root.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(root.c_str(), 01777), 0);
  ASSERT_EQ(::chown(root.c_str(), kSquashedRootUid, kSquashedRootUid), 0);
  EXPECT_TRUE(open_shared_root(root));
  ASSERT_EQ(::chown(share.c_str(), kSquashedRootUid, kSquashedRootUid), 0);  // not the caller's: an admin's job
  ASSERT_EQ(::chmod(share.c_str(), 0777), 0);
  auto refused = open_shared_root(root);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, DirProblem::Kind::writable);
  EXPECT_NE(refused.error().message().find("chmod +t " + share), std::string::npos) << refused.error().message();
  EXPECT_NE(refused.error().message().find("NO_ROOT_SQUASH"), std::string::npos) << refused.error().message();
}

}  // namespace
}  // namespace tpurun

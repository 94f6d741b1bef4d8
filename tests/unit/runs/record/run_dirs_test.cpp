// create_log_dir / list_run_dirs on a shared logs root: the caller's own,
// private dirs only; anything else is refused with the fix.
#include <gmock/gmock.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "fakes/temp_dir.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/util/atomic_file.hpp"
#include "tpurun/util/safe_dir.hpp"

namespace tpurun {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class RunDirsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    logs_ = temp_.path() + "/logs";
    ASSERT_EQ(::mkdir(logs_.c_str(), 0755), 0);
  }
  std::string make_run(const std::string& id) {
    std::string dir = create_log_dir(logs_, "alice", "proj", id);
    write_file_atomic(dir + "/run.json", "{}");
    return dir;
  }
  unsigned mode_of(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0);
    return st.st_mode & 07777;
  }

  testing::TempDir temp_;
  std::string logs_;
};

TEST_F(RunDirsTest, CreatesAPrivateUserDirAndListsRunsNewestFirst) {
  mode_t old = ::umask(022);
  std::string first = make_run("20240101_000000_aaaaaa_sim");
  std::string second = make_run("20240102_000000_bbbbbb_sim");
  ::umask(old);

  EXPECT_EQ(first, logs_ + "/alice/proj/20240101_000000_aaaaaa_sim");
  EXPECT_EQ(mode_of(logs_ + "/alice"), 0700u);
  EXPECT_EQ(mode_of(first), 0755u);
  EXPECT_THAT(list_run_dirs(logs_, "alice"), ElementsAre(second, first));
  EXPECT_EQ(find_run_dir(logs_, "alice", "20240102"), second);
}

TEST_F(RunDirsTest, ARunDirIsCreatedOnlyOnce) {
  make_run("20240101_000000_aaaaaa_sim");
  EXPECT_THROW(create_log_dir(logs_, "alice", "proj", "20240101_000000_aaaaaa_sim"), std::exception);
}

TEST_F(RunDirsTest, NoUserDirIsNoRuns) { EXPECT_THAT(list_run_dirs(logs_, "alice"), IsEmpty()); }

TEST_F(RunDirsTest, LastAndLatestAreTheNewestRun) {
  EXPECT_THROW(find_run_dir(logs_, "alice", "last"), std::runtime_error);
  make_run("20240101_000000_aaaaaa_sim");
  std::string newest = make_run("20240102_000000_bbbbbb_sim");
  EXPECT_EQ(find_run_dir(logs_, "alice", "last"), newest);
  EXPECT_EQ(find_run_dir(logs_, "alice", "latest"), newest);
  EXPECT_EQ(find_run_dir(logs_, "alice", "20240101"), logs_ + "/alice/proj/20240101_000000_aaaaaa_sim");
  try {
    find_run_dir(logs_, "alice", "20240101_000000_aaaaab_sim");
    ADD_FAILURE() << "an unknown run resolved";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("did you mean '20240101_000000_aaaaaa_sim'?"));
  }
}

TEST_F(RunDirsTest, AUserDirThatOthersCanWriteIsRefusedEverywhere) {
  ASSERT_EQ(::mkdir((logs_ + "/alice").c_str(), 0700), 0);
  ASSERT_EQ(::chmod((logs_ + "/alice").c_str(), 0777), 0);

  EXPECT_THROW(create_log_dir(logs_, "alice", "proj", "r"), UnsafeDirError);
  EXPECT_FALSE(fs::exists(logs_ + "/alice/proj"));
  try {
    list_run_dirs(logs_, "alice");
    ADD_FAILURE() << "no error";
  } catch (const UnsafeDirError& e) {
    EXPECT_THAT(e.what(), HasSubstr("chmod go-w " + logs_ + "/alice"));
  }
  EXPECT_THROW(find_run_dir(logs_, "alice", "r"), UnsafeDirError);
}

TEST_F(RunDirsTest, ASymlinkedUserDirIsRefusedAndNotWrittenThrough) {
  std::string elsewhere = temp_.path() + "/elsewhere";
  ASSERT_EQ(::mkdir(elsewhere.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(elsewhere.c_str(), (logs_ + "/alice").c_str()), 0);

  EXPECT_THROW(create_log_dir(logs_, "alice", "proj", "r"), UnsafeDirError);
  EXPECT_THROW(list_run_dirs(logs_, "alice"), UnsafeDirError);
  EXPECT_TRUE(fs::is_empty(elsewhere));
}

TEST_F(RunDirsTest, ARunDirOthersCanWriteStopsTheListing) {
  std::string dir = make_run("20240101_000000_aaaaaa_sim");
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  try {
    list_run_dirs(logs_, "alice");
    ADD_FAILURE() << "no error";
  } catch (const UnsafeDirError& e) {
    EXPECT_THAT(e.what(), HasSubstr(dir + " is writable by group or others"));
  }
}

}  // namespace
}  // namespace tpurun

// Where a run's profiles go, and the session ids of new captures.
#include "tpurun/runs/record/profile_layout.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace tpurun {
namespace {

namespace fs = std::filesystem;

class ProfileLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/tpurun-profile-layout-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

// 2026-11-26T10:00:05Z
const auto kNow = std::chrono::system_clock::time_point(std::chrono::seconds(1795687205));

TEST_F(ProfileLayoutTest, RootIsTensorBoardsPluginDir) {
  EXPECT_EQ(profile_root("/logs/alice/p/RUN"), "/logs/alice/p/RUN/plugins/profile");
}

TEST_F(ProfileLayoutTest, SessionIdIsTheUtcTimeAndNeverReusesADir) {
  const std::string root = profile_root(dir_);
  EXPECT_EQ(new_session_id(kNow + std::chrono::milliseconds(999), root), "2026_11_26_10_00_05");
  fs::create_directories(root + "/2026_11_26_10_00_05");
  EXPECT_EQ(new_session_id(kNow, root), "2026_11_26_10_00_05_2");
  fs::create_directories(root + "/2026_11_26_10_00_05_2");
  EXPECT_EQ(new_session_id(kNow, root), "2026_11_26_10_00_05_3");
}

TEST_F(ProfileLayoutTest, SessionsListed) {
  EXPECT_TRUE(profile_sessions(dir_).empty());
  fs::create_directories(profile_root(dir_) + "/2026_11_26_10_00_07");
  fs::create_directories(profile_root(dir_) + "/2026_11_26_10_00_05");
  EXPECT_EQ(profile_sessions(dir_), (std::vector<std::string>{"2026_11_26_10_00_05", "2026_11_26_10_00_07"}));
}

}  // namespace
}  // namespace tpurun

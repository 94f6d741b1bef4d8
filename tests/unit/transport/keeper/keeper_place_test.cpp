#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "fakes/system_fakes.hpp"
#include "tpurun/transport/keeper/keeper.hpp"
#include "tpurun/util/usage_error.hpp"

namespace tpurun {
namespace {

class KeeperPlaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/keeper-place-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    runtime_ = tmpl;
    env_.set("XDG_RUNTIME_DIR", runtime_);
    env_.set("HOME", "/home/alice");
  }
  void TearDown() override { std::filesystem::remove_all(runtime_); }
  std::string runtime_;
  testing::FakeEnvironment env_;
};

TEST_F(KeeperPlaceTest, MakesAPrivateDirUnderTheRuntimeDir) {
  auto place = keeper_place(env_);
  ASSERT_TRUE(place) << place.error();
  EXPECT_EQ(place->dir, runtime_ + "/tpurun");
  struct stat st {};
  ASSERT_EQ(::stat(place->dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(place->socket.rfind(place->dir + "/keeper-", 0), 0u);
  EXPECT_EQ(place->log, place->dir + "/keeper.log");
}

TEST_F(KeeperPlaceTest, ADirOthersCanEnterIsRefusedAndSaysHowToFixIt) {
  ASSERT_EQ(::mkdir((runtime_ + "/tpurun").c_str(), 0755), 0);
  ASSERT_EQ(::chmod((runtime_ + "/tpurun").c_str(), 0755), 0);
  auto place = keeper_place(env_);
  ASSERT_FALSE(place);
  EXPECT_NE(place.error().find("has mode 0755"), std::string::npos) << place.error();
  EXPECT_NE(place.error().find("chmod 700"), std::string::npos) << place.error();
}

TEST_F(KeeperPlaceTest, ASymlinkInPlaceOfTheDirIsRefused) {
  ASSERT_EQ(::symlink("/tmp", (runtime_ + "/tpurun").c_str()), 0);
  auto place = keeper_place(env_);
  ASSERT_FALSE(place);
  EXPECT_NE(place.error().find("is a symlink"), std::string::npos) << place.error();
}

TEST_F(KeeperPlaceTest, AnotherAgentSocketIsAnotherKeeper) {
  auto first = keeper_place(env_);
  env_.set("SSH_AUTH_SOCK", "/tmp/ssh-agent.sock");
  auto second = keeper_place(env_);
  ASSERT_TRUE(first && second);
  EXPECT_NE(first->socket, second->socket);
}

// keeper_place makes /tmp/tpurun-UID, the real user's keeper dir: it runs
// in a child with a /tmp of its own (a mount namespace and a tmpfs), so the
// real one is neither made nor left behind.
TEST_F(KeeperPlaceTest, ARuntimeDirTooLongForASocketFallsBackToTmp) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a /tmp of its own (unshare, mount)";
  env_.set("XDG_RUNTIME_DIR", "/" + std::string(90, 'r'));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", "/tmp", "tmpfs", 0, "mode=1777") != 0) {
      ::_exit(10);
    }
    auto place = keeper_place(env_);
    if (!place) ::_exit(11);
    if (place->dir != "/tmp/tpurun-" + std::to_string(::getuid())) ::_exit(12);
    ::_exit(place->socket.size() < 108u ? 0 : 13);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  // 10: no private /tmp; 11: refused; 12: another dir; 13: a socket path too long
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST(KeeperIdleTest, TenMinutesUnlessSetAndZeroTurnsItOff) {
  testing::FakeEnvironment env;
  EXPECT_EQ(keeper_idle(env), std::chrono::minutes(10));
  env.set("TPURUN_KEEP", "90s");
  EXPECT_EQ(keeper_idle(env), std::chrono::seconds(90));
  env.set("TPURUN_KEEP", "0");
  EXPECT_EQ(keeper_idle(env).count(), 0);
  env.set("TPURUN_KEEP", "soon");
  EXPECT_THROW(keeper_idle(env), UsageError);
}

}  // namespace
}  // namespace tpurun

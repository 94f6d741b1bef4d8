// Who may use a keeper (docs/keeper.md, "Only you"): its dir must be the
// user's own; a client talks only to a keeper of its own uid, and a keeper
// serves only clients of its own uid (SO_PEERCRED on both ends). Another
// uid is made as safe_dir_test does: the unit tests run as root, which can
// chown a dir and setuid a child; without root these skip.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fakes/system_fakes.hpp"
#include "fakes/temp_dir.hpp"
#include "tpurun/transport/keeper/keeper.hpp"
#include "tpurun/util/version.hpp"
#include "transport/keeper/frames.hpp"
#include "transport/keeper/keeper_client.hpp"

namespace tpurun {
namespace {
// (A named namespace: the unit tests are built in unity batches.)
namespace keeper_safety {

constexpr uid_t kOther = 65534;  // nobody

bool become_other() { return ::setgroups(0, nullptr) == 0 && ::setresgid(kOther, kOther, kOther) == 0 &&
                             ::setresuid(kOther, kOther, kOther) == 0; }

// Waits (bounded) for `fd` to be readable; false after `ms`.
bool readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1;
}

// Waits (bounded) for a path to exist.
bool appears(const std::string& path, std::chrono::seconds bound) {
  const auto end = std::chrono::steady_clock::now() + bound;
  struct stat st {};
  while (::lstat(path.c_str(), &st) != 0) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

sockaddr_un address_of(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

}  // namespace keeper_safety
using namespace keeper_safety;

class KeeperSafetyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a dir, a keeper or a client of another uid";
    ASSERT_EQ(::chmod(temp_.path().c_str(), 0755), 0);
  }
  void TearDown() override {
    for (pid_t pid : children_) {  // not reaped yet, so still ours
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  // A child of this test's: fork's answer, remembered until it is reaped.
  pid_t child(pid_t pid) {
    if (pid > 0) children_.push_back(pid);
    return pid;
  }
  // The child's exit code, waiting at most `bound`; -1 if it did not end (it
  // is then killed). Reaped: TearDown forgets it.
  int exit_code_of(pid_t pid, std::chrono::seconds bound) {
    const auto end = std::chrono::steady_clock::now() + bound;
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > end) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        status = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::erase(children_, pid);
    if (status == -1) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  testing::TempDir temp_;
  std::vector<pid_t> children_;
};

TEST_F(KeeperSafetyTest, ADirOfAnotherOwnerIsRefused) {
  // bob's private tpurun/ inside alice's runtime dir: 0700, not a symlink,
  // and still not alice's.
  const std::string dir = temp_.path() + "/tpurun";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chown(dir.c_str(), kOther, kOther), 0);
  testing::FakeEnvironment env;
  env.set("XDG_RUNTIME_DIR", temp_.path());
  auto place = keeper_place(env);
  ASSERT_FALSE(place) << "accepted " << place->dir;
  EXPECT_NE(place.error().find("belongs to uid 65534, not to you (uid 0)"), std::string::npos) << place.error();
}

// A listener of another uid at the keeper's socket, which answers with the
// right hello: the client hangs up before it says anything.
TEST_F(KeeperSafetyTest, TheClientTalksToNoKeeperOfAnotherUid) {
  ASSERT_EQ(::chmod(temp_.path().c_str(), 0777), 0);
  const std::string socket = temp_.path() + "/keeper.sock";
  int ready[2];
  ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
  const pid_t impostor = child(::fork());
  ASSERT_GE(impostor, 0);
  if (impostor == 0) {
    // The impostor: listens as another uid, says the right hello, and tells
    // the test (exit 3) whether a request came.
    ::close(ready[0]);
    if (!become_other()) ::_exit(10);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a = address_of(socket);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 4) != 0) ::_exit(11);
    if (::write(ready[1], "x", 1) != 1) ::_exit(12);
    const int client = ::accept(fd, nullptr, nullptr);
    if (client < 0) ::_exit(13);
    keeper::FrameWriter writer(client);
    writer.send(keeper::FrameType::hello, {{"version", version_line()}, {"pid", ::getpid()}});
    char byte;
    ::_exit(::read(client, &byte, 1) == 1 ? 3 : 0);
  }
  ::close(ready[1]);
  ASSERT_TRUE(readable(ready[0], 30000)) << "the listener did not start";
  ::close(ready[0]);

  std::string why;
  bool absent = true;
  auto dialed = keeper::dial_keeper(socket, 5000, why, absent);
  ASSERT_FALSE(dialed) << "the client took a keeper of uid " << kOther << " for its own";
  EXPECT_FALSE(absent);
  EXPECT_NE(why.find("is not yours (uid 65534)"), std::string::npos) << why;
  EXPECT_EQ(exit_code_of(impostor, std::chrono::seconds(30)), 0) << "the impostor was sent something";
}

// A real keeper (run_keeper, in a child, as root) whose socket another uid
// can reach (a dir and socket opened by mistake): that uid's connection is
// closed before the hello and logged; the keeper's own uid is served.
TEST_F(KeeperSafetyTest, TheKeeperServesNoClientOfAnotherUid) {
  KeeperPlace place{temp_.path(), temp_.path() + "/keeper-test.sock", temp_.path() + "/keeper.log"};
  const pid_t keeper_pid = child(::fork());
  ASSERT_GE(keeper_pid, 0);
  if (keeper_pid == 0) {
    const int log = ::open(place.log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (log < 0 || ::dup2(log, 2) != 2) ::_exit(10);
    ::_exit(run_keeper(place, std::chrono::seconds(60)));
  }
  ASSERT_TRUE(appears(place.socket, std::chrono::seconds(60))) << "no keeper socket";
  ASSERT_EQ(::chmod(place.socket.c_str(), 0777), 0);

  const pid_t other = child(::fork());
  ASSERT_GE(other, 0);
  if (other == 0) {
    // Exit 0: connected and hung up on without a byte; 1: served; else broken.
    if (!become_other()) ::_exit(10);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a = address_of(place.socket);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) ::_exit(11);
    if (!readable(fd, 30000)) ::_exit(12);
    char byte;
    ::_exit(::read(fd, &byte, 1) == 0 ? 0 : 1);
  }
  EXPECT_EQ(exit_code_of(other, std::chrono::seconds(60)), 0) << "uid " << kOther << " was served (1) or could not ask";

  // Its own uid is served: the hello comes.
  std::string why;
  bool absent = false;
  EXPECT_TRUE(keeper::dial_keeper(place.socket, 5000, why, absent)) << why;
  EXPECT_EQ(keeper_stop(place).value_or(-1), 0);
  EXPECT_EQ(exit_code_of(keeper_pid, std::chrono::seconds(60)), 0);
  std::ifstream in(place.log);
  std::stringstream log;
  log << in.rdbuf();
  EXPECT_NE(log.str().find("refused a connection from uid 65534 (nobody)"), std::string::npos) << log.str();
}

}  // namespace
}  // namespace tpurun

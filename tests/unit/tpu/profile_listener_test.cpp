// Who serves the profiler port: the script's answer parsed, and the real
// script run by the local shell against a socket this test listens on.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "tpurun/tpu/profile.hpp"

namespace tpurun {
namespace {

TEST(ProfileListenerTest, NothingListening) {
  auto l = parse_listener("none\n");
  ASSERT_TRUE(l.ok());
  EXPECT_FALSE(l->listening);
}

TEST(ProfileListenerTest, AnotherUsersListenerHasOnlyItsOwner) {
  auto l = parse_listener("listener 1001 bob other\n");
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(l->listening);
  EXPECT_FALSE(l->mine);
  EXPECT_EQ(l->user, "bob");
  EXPECT_FALSE(l->pid);
}

TEST(ProfileListenerTest, OwnListenerWithItsProcessAndRun) {
  auto l = parse_listener("listener 1000 alice mine 4242 20240419_000859_d4awst_sim\n");
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(l->mine);
  EXPECT_EQ(l->pid, 4242);
  EXPECT_EQ(l->run_id, "20240419_000859_d4awst_sim");
  auto unknown = parse_listener("listener 1000 - mine - -\n");
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->user, "uid 1000");
  EXPECT_FALSE(unknown->pid);
  EXPECT_EQ(unknown->run_id, "");
}

TEST(ProfileListenerTest, GarbleIsAnError) {
  EXPECT_FALSE(parse_listener("").ok());
  EXPECT_FALSE(parse_listener("listener x\n").ok());
}

// The script itself, on this host: a socket this process listens on is
// found, with this process and its run (none under ctest).
TEST(ProfileListenerTest, ScriptFindsThisProcessListening) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);
  // /proc/PID/environ is the environment the process started with.
  const char* started_with = std::getenv("TPURUN_RUN_ID");
  const std::string run_id = started_with != nullptr ? started_with : "";

  auto answer = [](int p) {
    const RemoteCommand command = build_listener_command(p);
    char path[] = "/tmp/tpurun-listener-XXXXXX";
    const int tmp = ::mkstemp(path);
    EXPECT_GE(tmp, 0);
    EXPECT_EQ(::write(tmp, command.stdin_data.data(), command.stdin_data.size()),
              static_cast<ssize_t>(command.stdin_data.size()));
    ::close(tmp);
    std::string out;
    FILE* pipe = ::popen(("sh " + std::string(path) + " " + std::to_string(p)).c_str(), "r");
    char buf[256];
    while (pipe != nullptr && std::fgets(buf, sizeof buf, pipe) != nullptr) out += buf;
    if (pipe != nullptr) ::pclose(pipe);
    ::unlink(path);
    return out;
  };
  auto l = parse_listener(answer(port));
  ::close(fd);
  ASSERT_TRUE(l.ok()) << l.error();
  EXPECT_TRUE(l->listening);
  EXPECT_TRUE(l->mine);
  EXPECT_EQ(l->uid, static_cast<int>(::getuid()));
  EXPECT_EQ(l->pid, static_cast<int>(::getpid()));
  EXPECT_EQ(l->run_id, run_id);

  auto closed = parse_listener(answer(port));
  ASSERT_TRUE(closed.ok());
  EXPECT_FALSE(closed->listening);
}

}  // namespace
}  // namespace tpurun

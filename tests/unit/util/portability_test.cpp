// The helpers that hide what older systems lack (glibc < 2.34, GCC < 11).
// scripts/package --test runs these in a Debian 11 root, where each takes its
// fallback route; on Debian 12 they take the library's.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tpurun/util/parse_double.hpp"
#include "tpurun/util/signal_name.hpp"
#include "util/inherited_fds.hpp"

namespace tpurun {
namespace {

TEST(InheritedFdsTest, AForkedChildKeepsOnlyStdio) {
  // given descriptors of ours that are not close-on-exec, one of them high
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const int high = ::fcntl(fds[0], F_DUPFD, 700);
  ASSERT_GE(high, 700);
  // when a forked child closes what it inherited
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close_inherited_fds();
    // then stdio is open and nothing of ours is (exit code says which failed)
    if (::fcntl(0, F_GETFD) < 0 || ::fcntl(1, F_GETFD) < 0 || ::fcntl(2, F_GETFD) < 0) ::_exit(10);
    if (::fcntl(fds[0], F_GETFD) >= 0 || ::fcntl(fds[1], F_GETFD) >= 0) ::_exit(11);
    if (::fcntl(high, F_GETFD) >= 0) ::_exit(12);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ::close(fds[0]);
  ::close(fds[1]);
  ::close(high);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(SignalAbbrevTest, NamesTheStandardSignalsAsKillDashLDoes) {
  EXPECT_EQ(signal_abbrev(SIGHUP), "HUP");
  EXPECT_EQ(signal_abbrev(SIGKILL), "KILL");
  EXPECT_EQ(signal_abbrev(SIGSEGV), "SEGV");
  EXPECT_EQ(signal_abbrev(SIGTERM), "TERM");
  EXPECT_EQ(signal_abbrev(SIGCHLD), "CHLD");
  EXPECT_EQ(signal_abbrev(SIGSYS), "SYS");
}

TEST(SignalAbbrevTest, GivesTheNumberWhenThereIsNoName) {
  EXPECT_EQ(signal_abbrev(0), "0");
  EXPECT_EQ(signal_abbrev(SIGRTMIN + 2), std::to_string(SIGRTMIN + 2));
  EXPECT_EQ(signal_abbrev(200), "200");
  EXPECT_EQ(signal_abbrev(-1), "-1");
}

TEST(ParseDoubleTest, ReadsWholeDecimalNumbers) {
  EXPECT_EQ(parse_double("1.5"), 1.5);
  EXPECT_EQ(parse_double("-2e-3"), -2e-3);
  EXPECT_EQ(parse_double("0"), 0.0);
  EXPECT_EQ(parse_double("12345678901234567890"), 12345678901234567890.0);
}

TEST(ParseDoubleTest, RefusesWhatFromCharsRefuses) {
  EXPECT_EQ(parse_double(""), std::nullopt);
  EXPECT_EQ(parse_double("+1"), std::nullopt);
  EXPECT_EQ(parse_double(" 1"), std::nullopt);
  EXPECT_EQ(parse_double("1 "), std::nullopt);
  EXPECT_EQ(parse_double("1.5GiB"), std::nullopt);
  EXPECT_EQ(parse_double("0x10"), std::nullopt);
  EXPECT_EQ(parse_double("."), std::nullopt);
}

TEST(ParseDoubleTest, RefusesValuesOutOfRange) {
  EXPECT_EQ(parse_double("1e999"), std::nullopt);
  EXPECT_EQ(parse_double("-1e999"), std::nullopt);
}

TEST(ParseDoubleTest, ReadsOnlyTheGivenCharacters) {
  // a view into a longer buffer: the digits after it are not part of it
  const std::string text = "2.5e3999";
  EXPECT_EQ(parse_double(std::string_view(text).substr(0, 5)), 2.5e3);
}

}  // namespace
}  // namespace tpurun

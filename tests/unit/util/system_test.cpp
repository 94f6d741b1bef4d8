#include "tpurun/util/system.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "fakes/system_fakes.hpp"

namespace tpurun {
namespace {

using ::testing::HasSubstr;
using tpurun::testing::FakeEnvironment;

class SystemProcessRunnerTest : public ::testing::Test {
 protected:
  ProcessResult sh(const std::string& script, const std::string& input = "") {
    return runner_.run({"sh", "-c", script}, input);
  }
  SystemProcessRunner runner_;
};

TEST_F(SystemProcessRunnerTest, CapturesStdoutAndStderrSeparately) {
  // when a command writes to both streams
  ProcessResult r = sh("echo out; echo err >&2");
  // then each lands in its own buffer
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST_F(SystemProcessRunnerTest, PassesArgumentsWithoutAShell) {
  // given an argument a shell would split and expand
  ProcessResult r = runner_.run({"printf", "%s|", "a b", "$HOME", "*"});
  // then the program sees it verbatim
  EXPECT_EQ(r.out, "a b|$HOME|*|");
}

TEST_F(SystemProcessRunnerTest, ReportsTheExitCode) {
  EXPECT_EQ(sh("exit 3").exit_code, 3);
  EXPECT_EQ(sh("true").exit_code, 0);
}

TEST_F(SystemProcessRunnerTest, ReportsDeathBySignalAs128PlusSignal) {
  // when the child kills itself with SIGTERM (15)
  ProcessResult r = sh("kill -TERM $$");
  // then the exit code follows the shell's convention
  EXPECT_EQ(r.exit_code, 128 + 15);
}

TEST_F(SystemProcessRunnerTest, MissingProgramExits127WithAMessage) {
  ProcessResult r = runner_.run({"tpurun-no-such-program-xyz"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_THAT(r.err, HasSubstr("tpurun-no-such-program-xyz"));
}

TEST_F(SystemProcessRunnerTest, FeedsStdin) {
  ProcessResult r = runner_.run({"cat"}, "hello\nworld\n");
  EXPECT_EQ(r.out, "hello\nworld\n");
}

TEST_F(SystemProcessRunnerTest, EmptyStdinIsEndOfFile) {
  // given no stdin data, a reader must not wait forever
  ProcessResult r = runner_.run({"cat"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
}

TEST_F(SystemProcessRunnerTest, BigOutputOnBothStreamsDoesNotDeadlock) {
  // given far more output than a pipe buffer holds, interleaved on both streams
  ProcessResult r =
      sh("i=0; while [ $i -lt 2000 ]; do printf '%0500d\\n' 0; printf '%0500d\\n' 1 >&2; "
         "i=$((i+1)); done");
  // then all of it arrives
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.size(), 2000u * 501);
  EXPECT_EQ(r.err.size(), 2000u * 501);
}

TEST_F(SystemProcessRunnerTest, BigStdinEchoedBackDoesNotDeadlock) {
  // given 4 MB through cat: it blocks writing stdout unless we read while we feed
  std::string input(4 << 20, 'x');
  ProcessResult r = runner_.run({"cat"}, input);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.size(), input.size());
}

TEST_F(SystemProcessRunnerTest, ChildIgnoringStdinDoesNotKillUs) {
  // given a child that exits without reading 4 MB of stdin
  std::string input(4 << 20, 'x');
  ProcessResult r = sh("exit 5", input);
  // then we see its exit code instead of dying of SIGPIPE
  EXPECT_EQ(r.exit_code, 5);
}

TEST_F(SystemProcessRunnerTest, RunsInTheGivenDirectory) {
  std::string dir = std::filesystem::canonical(std::filesystem::temp_directory_path()).string();
  ProcessResult r = runner_.run({"pwd", "-P"}, "", dir);
  EXPECT_EQ(r.out, dir + "\n");
}

TEST_F(SystemProcessRunnerTest, MissingDirectoryExits127) {
  ProcessResult r = runner_.run({"true"}, "", std::string("/nonexistent/tpurun-test-dir"));
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/tpurun-test-dir"));
}

TEST_F(SystemProcessRunnerTest, ChildInheritsOnlyStdio) {
  // given a descriptor of ours that is not close-on-exec
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  // when a child lists its open descriptors
  ProcessResult r = runner_.run({"ls", "/proc/self/fd"});
  ::close(fds[0]);
  ::close(fds[1]);
  // then it has stdio and the one ls itself opened, nothing of ours
  EXPECT_EQ(r.out, "0\n1\n2\n3\n");
}

TEST(ExpandHomeTest, ReplacesLeadingTildeOnly) {
  FakeEnvironment env(std::map<std::string, std::string>{{"HOME", "/home/alice"}});
  EXPECT_EQ(expand_home("~/.ssh/id", env), "/home/alice/.ssh/id");
  EXPECT_EQ(expand_home("~", env), "/home/alice");
  EXPECT_EQ(expand_home("/abs/~/x", env), "/abs/~/x");
  EXPECT_EQ(expand_home("~bob/x", env), "~bob/x");
}

TEST(ExpandHomeTest, LeavesPathAloneWithoutHome) {
  FakeEnvironment env;
  EXPECT_EQ(expand_home("~/.ssh/id", env), "~/.ssh/id");
}

TEST(SystemEnvironmentTest, ReadsTheProcessEnvironment) {
  ::setenv("TPURUN_TEST_VARIABLE", "value", 1);
  SystemEnvironment env;
  EXPECT_EQ(env.get("TPURUN_TEST_VARIABLE"), "value");
  ::unsetenv("TPURUN_TEST_VARIABLE");
  EXPECT_EQ(env.get("TPURUN_TEST_VARIABLE"), std::nullopt);
}

TEST_F(SystemProcessRunnerTest, RunBoundedGivesUpOnAProgramThatHangs) {
  // a program that would outlive its limit (and its children with it)
  ProcessResult r = runner_.run_bounded({"sh", "-c", "sleep 60 & sleep 60"}, std::chrono::seconds(1), CancelToken());
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, 124);
  EXPECT_THAT(r.err, HasSubstr("gave up after 1s"));
}

TEST_F(SystemProcessRunnerTest, RunBoundedStopsWhenCancelledAndOtherwiseRunsAsRun) {
  std::atomic<bool> stop{true};
  ProcessResult r = runner_.run_bounded({"sleep", "60"}, std::chrono::seconds(600), CancelToken(&stop));
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 130);
  ProcessResult ok = runner_.run_bounded({"sh", "-c", "echo hi; exit 3"}, std::chrono::seconds(600), CancelToken());
  EXPECT_FALSE(ok.timed_out);
  EXPECT_EQ(ok.exit_code, 3);
  EXPECT_EQ(ok.out, "hi\n");
}

}  // namespace
}  // namespace tpurun

// A file that cannot be read stops staging with its name, and leaves nothing.
#include <gmock/gmock.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "staging_fixture.hpp"

namespace tpurun::testing_staging {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Root reads anything; drop the capabilities that let it (in this process only).
bool drop_dac_override() {
  if (::geteuid() != 0) return true;
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  for (int cap : {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH})
    data[cap / 32].effective &= ~(1u << (cap % 32));
  return ::syscall(SYS_capset, &header, data) == 0;
}

// Runs create_snapshot in a child process without DAC override and returns
// its error message ("OK" when it succeeded).
std::string stage_in_child(const SnapshotRequest& request) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return "pipe failed";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    std::string message = "could not drop capabilities";
    if (drop_dac_override()) {
      SystemProcessRunner processes;
      auto staged = create_snapshot(request, processes, CancelToken());
      message = staged.ok() ? "OK" : staged.error().message;
    }
    [[maybe_unused]] auto n = ::write(pipe_fds[1], message.data(), message.size());
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string message;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0)
    message.append(buffer, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return message;
}

using UnreadableTest = StagingTest;

TEST_F(UnreadableTest, UnreadableFileIsNamedAndNoSnapshotOrTempDirRemains) {
  // given: many readable files, and one unreadable one sorted last, so that
  // staging fails midway with most of the tree already built
  for (int i = 0; i < 100; ++i)
    write("a" + std::to_string(i % 10) + "/f" + std::to_string(i) + ".py", std::to_string(i));
  write("zz/secret.key", "s3cret", 0000);

  // when
  std::string message = stage_in_child(request());

  // then
  EXPECT_THAT(message, HasSubstr("zz/secret.key"));
  EXPECT_THAT(message, HasSubstr("Permission denied"));
  EXPECT_THAT(user_dir_entries(), ElementsAre(".objects"));
}

TEST_F(UnreadableTest, UnreadableDirectoryOutsideGitIsNamed) {
  write("ok.py", "1");
  write("locked/inner.py", "2");
  ::chmod((project_ + "/locked").c_str(), 0000);

  std::string message = stage_in_child(request());
  ::chmod((project_ + "/locked").c_str(), 0755);

  EXPECT_THAT(message, HasSubstr("locked"));
  EXPECT_THAT(message, HasSubstr("Permission denied"));
  EXPECT_THAT(user_dir_entries(), ElementsAre());
}

}  // namespace
}  // namespace tpurun::testing_staging

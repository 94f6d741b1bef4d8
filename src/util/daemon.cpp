#include "tpurun/util/daemon.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include "util/inherited_fds.hpp"

namespace tpurun {

Result<int, std::string> spawn_detached_self(const std::vector<std::string>& args, const std::string& log_path,
                                             int stdin_fd) {
  std::vector<std::string> argv_text{"tpurun"};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);

  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return unexpected(fmt::format("pipe: {}", std::strerror(errno)));
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(report[0]);
    ::close(report[1]);
    return unexpected(fmt::format("fork: {}", std::strerror(errno)));
  }
  if (child == 0) {
    ::setsid();
    const pid_t grandchild = ::fork();
    if (grandchild != 0) ::_exit(grandchild < 0 ? 1 : 0);
    const int self = ::getpid();
    if (::write(report[1], &self, sizeof self) != sizeof self) ::_exit(1);
    int null = stdin_fd >= 0 ? stdin_fd : ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    int log = ::open(log_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (null < 0 || log < 0) ::_exit(1);
    ::dup2(null, 0);
    ::dup2(log, 1);
    ::dup2(log, 2);
    close_inherited_fds();
    ::execv("/proc/self/exe", argv.data());
    ::_exit(127);
  }
  ::close(report[1]);
  int status = 0;
  ::waitpid(child, &status, 0);
  int pid = 0;
  ssize_t n = ::read(report[0], &pid, sizeof pid);
  ::close(report[0]);
  if (n != sizeof pid || pid <= 0) return unexpected(std::string("the detached process did not start"));
  return pid;
}

}  // namespace tpurun

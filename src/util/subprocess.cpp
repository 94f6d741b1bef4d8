#include "tpurun/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fmt/format.h>

namespace tpurun {
namespace {

using Clock = std::chrono::steady_clock;

struct Pipe {
  int fd[2] = {-1, -1};
  bool open() { return ::pipe2(fd, O_CLOEXEC) == 0; }
  void close_end(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
  ~Pipe() { close_end(0), close_end(1); }
};

[[noreturn]] void exec_child(const std::vector<std::string>& argv, const std::optional<std::string>& cwd,
                             Pipe& in, Pipe& out, Pipe& err, int status_fd) {
  ::setpgid(0, 0);
  ::dup2(in.fd[0], STDIN_FILENO);
  ::dup2(out.fd[1], STDOUT_FILENO);
  ::dup2(err.fd[1], STDERR_FILENO);
  signal(SIGPIPE, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  int saved = 0;
  if (cwd && ::chdir(cwd->c_str()) != 0) {
    saved = errno;
  } else {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    saved = errno;
  }
  // Tell the parent why, through the close-on-exec status pipe.
  [[maybe_unused]] auto n = ::write(status_fd, &saved, sizeof saved);
  _exit(127);
}

void feed_stdin(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::write(fd, data.data() + sent, data.size() - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child stopped reading; that is its business
    sent += static_cast<size_t>(n);
  }
}

}  // namespace

Result<CommandExit, std::string> run_subprocess(const std::vector<std::string>& argv,
                                                const std::string& stdin_data,
                                                const std::optional<std::string>& cwd,
                                                OutputSink& sink, const CancelToken& cancel) {
  if (argv.empty()) return unexpected(std::string("empty command"));
  Pipe in, out, err, status;
  if (!in.open() || !out.open() || !err.open() || !status.open()) {
    return unexpected(fmt::format("pipe: {}", std::strerror(errno)));
  }
  pid_t pid = ::fork();
  if (pid < 0) return unexpected(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) exec_child(argv, cwd, in, out, err, status.fd[1]);
  ::setpgid(pid, pid);  // also in the parent, to win the race with kill()
  in.close_end(0), out.close_end(1), err.close_end(1), status.close_end(1);

  int child_errno = 0;
  if (::read(status.fd[0], &child_errno, sizeof child_errno) == sizeof child_errno) {
    ::waitpid(pid, nullptr, 0);
    return unexpected(fmt::format("cannot run {}: {}", argv[0], std::strerror(child_errno)));
  }
  feed_stdin(in.fd[1], stdin_data);
  in.close_end(1);

  pollfd fds[2] = {{out.fd[0], POLLIN, 0}, {err.fd[0], POLLIN, 0}};
  int open_streams = 2;
  int stage = 0;
  Clock::time_point cancel_at{};
  char buf[65536];
  while (open_streams > 0) {
    int ready = ::poll(fds, 2, 200);
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sink.write(i == 0 ? Stream::out : Stream::err, std::string_view(buf, static_cast<size_t>(n)));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_streams;
      }
    }
    if (cancel.cancelled()) {
      if (stage == 0) cancel_at = Clock::now();
      auto waited = Clock::now() - cancel_at;
      if (stage == 0) ::kill(-pid, SIGINT), stage = 1;
      else if (stage == 1 && waited > std::chrono::seconds(1)) ::kill(-pid, SIGTERM), stage = 2;
      else if (stage == 2 && waited > std::chrono::seconds(3)) ::kill(-pid, SIGKILL), stage = 3;
    }
  }
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(wstatus)) {
    int sig = WTERMSIG(wstatus);
    const char* abbrev = sigabbrev_np(sig);
    return CommandExit{128 + sig, std::string(abbrev ? abbrev : std::to_string(sig))};
  }
  return CommandExit{WEXITSTATUS(wstatus), std::nullopt};
}

}  // namespace tpurun

#include "tpurun/util/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>

#include "tpurun/util/signal_name.hpp"
#include "util/inherited_fds.hpp"

extern char** environ;

namespace tpurun {
namespace {

using Clock = std::chrono::steady_clock;

// Owns a file descriptor so that every early return closes it.
class Fd {
 public:
  Fd() = default;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

struct Pipes {
  // stdin is a socket pair rather than a pipe: send(MSG_NOSIGNAL) reports a
  // child that stopped reading as EPIPE instead of killing us with SIGPIPE,
  // without touching the process-wide signal disposition.
  Fd in_parent, in_child;
  Fd out_parent, out_child;
  Fd err_parent, err_child;
};

bool make_pipes(Pipes& p, std::string& error) {
  int in[2], out[2], err[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) {
    error = std::string("socketpair: ") + std::strerror(errno);
    return false;
  }
  p.in_parent.reset(in[0]);
  p.in_child.reset(in[1]);
  if (::pipe2(out, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  p.out_parent.reset(out[0]);
  p.out_child.reset(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  p.err_parent.reset(err[0]);
  p.err_child.reset(err[1]);
  return true;
}

// Starts argv[0] (searched in PATH) in its own process group, with its stdio
// on the child ends of `pipes`. Returns the pid, or -1 with `error` set.
pid_t spawn(const std::vector<std::string>& argv, const std::optional<std::string>& cwd,
            const Pipes& pipes, std::string& error) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_adddup2(&actions, pipes.in_child.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipes.out_child.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipes.err_child.get(), STDERR_FILENO);
  // gcloud or git must not inherit descriptors someone forgot to mark
  // close-on-exec (an SSH socket held open by a child outlives its session).
  close_inherited_on_spawn(actions);
  if (cwd) posix_spawn_file_actions_addchdir_np(&actions, cwd->c_str());

  // The child must not inherit signal state a caller set up for itself
  // (a blocked SIGINT or an ignored SIGPIPE changes how gcloud or git behave).
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD, SIGUSR1, SIGUSR2}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  // Its own process group, so that cancelling can stop everything it started.
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    error = "cannot run " + argv[0] + (cwd ? " in " + *cwd : "") + ": " + std::strerror(rc);
    return -1;
  }
  return pid;
}

// Ctrl-C: SIGINT to the child's group, SIGTERM after 1s, SIGKILL after 3s.
class Escalation {
 public:
  void step(pid_t group) {
    if (stage_ == 0) since_ = Clock::now();
    const auto waited = Clock::now() - since_;
    if (stage_ == 0) {
      ::kill(-group, SIGINT), stage_ = 1;
    } else if (stage_ == 1 && waited > std::chrono::seconds(1)) {
      ::kill(-group, SIGTERM), stage_ = 2;
    } else if (stage_ == 2 && waited > std::chrono::seconds(3)) {
      ::kill(-group, SIGKILL), stage_ = 3;
    }
  }

 private:
  int stage_ = 0;
  Clock::time_point since_{};
};

// Feeds stdin and drains stdout and stderr at the same time: a child that
// fills one pipe while we wait on another would otherwise deadlock.
void exchange(Pipes& p, std::string_view input, OutputSink& sink, pid_t child, const CancelToken& cancel) {
  if (input.empty()) p.in_parent.reset();
  char buf[65536];
  Fd* readers[2] = {&p.out_parent, &p.err_parent};
  Escalation escalation;
  while (p.out_parent.get() >= 0 || p.err_parent.get() >= 0) {
    pollfd fds[3] = {{p.in_parent.get(), POLLOUT, 0},
                     {p.out_parent.get(), POLLIN, 0},
                     {p.err_parent.get(), POLLIN, 0}};
    if (::poll(fds, 3, 200) < 0 && errno != EINTR) {
      sink.write(Stream::err, std::string("tpurun: poll: ") + std::strerror(errno) + "\n");
      return;
    }
    if (cancel.cancelled()) escalation.step(child);
    if (fds[0].revents != 0) {
      ssize_t n = ::send(p.in_parent.get(), input.data(), input.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) input.remove_prefix(static_cast<size_t>(n));
      bool retry = n < 0 && (errno == EAGAIN || errno == EINTR);
      if (input.empty() || (n <= 0 && !retry)) p.in_parent.reset();  // done, or child stopped reading
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i + 1].revents == 0) continue;
      ssize_t n = ::read(readers[i]->get(), buf, sizeof buf);
      if (n > 0) {
        sink.write(i == 0 ? Stream::out : Stream::err, std::string_view(buf, static_cast<size_t>(n)));
      } else if (n == 0 || errno != EINTR) {
        readers[i]->reset();
      }
    }
  }
}

CommandExit wait_exit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return {255, std::nullopt};
  }
  if (WIFSIGNALED(status)) {
    return {128 + WTERMSIG(status), signal_abbrev(WTERMSIG(status))};
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 255, std::nullopt};
}

}  // namespace

Result<CommandExit, std::string> run_subprocess(const std::vector<std::string>& argv,
                                                const std::string& stdin_data,
                                                const std::optional<std::string>& cwd,
                                                OutputSink& sink, const CancelToken& cancel) {
  if (argv.empty()) return unexpected(std::string("no program to run"));
  Pipes pipes;
  std::string error;
  pid_t pid = make_pipes(pipes, error) ? spawn(argv, cwd, pipes, error) : -1;
  if (pid < 0) return unexpected(error);
  // Our copies of the child's ends must go, or we would never see EOF.
  pipes.in_child.reset();
  pipes.out_child.reset();
  pipes.err_child.reset();
  exchange(pipes, stdin_data, sink, pid, cancel);
  return wait_exit(pid);
}

}  // namespace tpurun

// Connection::open_exec for a single-host "pod": `/bin/sh -c COMMAND` on this
// machine, its stdin, stdout and stderr on pipes.
#include "transport/local_exec.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <thread>

#include "tpurun/util/unique_fd.hpp"

extern char** environ;

namespace tpurun {
namespace {

class LocalExecStream : public ExecStream {
 public:
  LocalExecStream(pid_t pid, UniqueFd in, UniqueFd out, UniqueFd err)
      : pid_(pid), in_(std::move(in)), out_(std::move(out)), err_fd_(std::move(err)) {}
  ~LocalExecStream() override {
    in_.reset();
    out_.reset();
    err_fd_.reset();
    if (reaped_) return;
    // It sees EOF and a closed pipe, as a remote command sees its channel go.
    for (int i = 0; i < 40; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) != 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(pid_, SIGHUP);
    ::waitpid(pid_, nullptr, 0);
  }
  LocalExecStream(const LocalExecStream&) = delete;
  LocalExecStream& operator=(const LocalExecStream&) = delete;

  std::optional<TransportError> write(std::string_view data) override {
    while (!data.empty()) {
      if (!in_) return TransportError{ErrorKind::channel, "the command's input is closed"};
      ssize_t n = ::write(in_.get(), data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return TransportError{ErrorKind::channel, fmt::format("writing to the command: {}", std::strerror(errno))};
      data.remove_prefix(static_cast<size_t>(n));
    }
    return std::nullopt;
  }

  Result<StreamRead, TransportError> read(int wait_ms) override {
    if (!out_) return StreamRead{{}, true};
    pollfd fds[2] = {{out_.get(), POLLIN, 0}, {err_fd_ ? err_fd_.get() : -1, POLLIN, 0}};
    int ready = ::poll(fds, 2, wait_ms);
    if (ready < 0 && errno != EINTR) {
      return unexpected(TransportError{ErrorKind::local, fmt::format("poll: {}", std::strerror(errno))});
    }
    char buf[65536];
    if (ready > 0 && fds[1].revents != 0) {
      ssize_t n = ::read(err_fd_.get(), buf, sizeof buf);
      if (n > 0) {
        err_.append(buf, static_cast<size_t>(n));
      } else if (n == 0) {
        err_fd_.reset();
      }
    }
    if (ready <= 0 || fds[0].revents == 0) return StreamRead{};
    ssize_t n = ::read(out_.get(), buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return StreamRead{};
    if (n < 0) return unexpected(TransportError{ErrorKind::local, fmt::format("read: {}", std::strerror(errno))});
    if (n == 0) {
      out_.reset();
      return StreamRead{{}, true};
    }
    return StreamRead{std::string(buf, static_cast<size_t>(n)), false};
  }

  void close_input() override { in_.reset(); }

  std::string err() const override { return err_; }

  std::optional<int> exit_code() override {
    if (out_) return std::nullopt;
    while (err_fd_) {  // the rest of stderr
      char buf[4096];
      ssize_t n = ::read(err_fd_.get(), buf, sizeof buf);
      if (n > 0) {
        err_.append(buf, static_cast<size_t>(n));
      } else if (!(n < 0 && errno == EINTR)) {
        err_fd_.reset();
      }
    }
    if (!reaped_) {
      int status = 0;
      if (::waitpid(pid_, &status, 0) != pid_) return std::nullopt;
      reaped_ = true;
      code_ = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
    }
    return code_;
  }

 private:
  pid_t pid_;
  UniqueFd in_, out_, err_fd_;
  std::string err_;
  bool reaped_ = false;
  int code_ = 0;
};

}  // namespace

Result<std::unique_ptr<ExecStream>, TransportError> open_local_exec(const std::string& command_line) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return unexpected(TransportError{ErrorKind::local, std::strerror(errno)});
  UniqueFd in_r(in[0]), in_w(in[1]);
  if (::pipe2(out, O_CLOEXEC) != 0) return unexpected(TransportError{ErrorKind::local, std::strerror(errno)});
  UniqueFd out_r(out[0]), out_w(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) return unexpected(TransportError{ErrorKind::local, std::strerror(errno)});
  UniqueFd err_r(err[0]), err_w(err[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_r.get(), 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err_w.get(), 2);
  const char* argv[] = {"/bin/sh", "-c", command_line.c_str(), nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, "/bin/sh", &actions, nullptr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return unexpected(TransportError{ErrorKind::local, fmt::format("cannot start /bin/sh: {}", std::strerror(rc))});
  return std::unique_ptr<ExecStream>(new LocalExecStream(pid, std::move(in_w), std::move(out_r), std::move(err_r)));
}

}  // namespace tpurun

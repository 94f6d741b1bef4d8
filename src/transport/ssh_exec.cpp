// Connection::open_exec over SSH: an exec channel (RFC 4254 §6.5) whose stdin
// stays open, read and written by polling as SshStream is.
#include <libssh/libssh.h>

#include <fmt/format.h>

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <utility>

#include "transport/ssh_connection.hpp"

namespace tpurun {
namespace {

class SshExecStream : public ExecStream {
 public:
  SshExecStream(ssh_session session, ssh_channel channel) : session_(session), channel_(channel) {}
  ~SshExecStream() override {
    if (ssh_channel_is_open(channel_)) {
      ssh_channel_send_eof(channel_);
      ssh_channel_close(channel_);
    }
    ssh_channel_free(channel_);
  }
  SshExecStream(const SshExecStream&) = delete;
  SshExecStream& operator=(const SshExecStream&) = delete;

  // In pieces of 64 KiB: libssh copies each write into the session's buffer
  // (and again encrypted) and keeps the buffer's size for the session's life.
  // A 730 KiB manifest written whole cost each of 32 sessions 1 MiB for good.
  // Never more than the worker's window: libssh's blocking write waits for a
  // window without end (a stopped command, a full pipe), and no keepalive or
  // Ctrl-C could get through; here the wait is ours (wait_for_window).
  std::optional<TransportError> write(std::string_view data) override {
    while (!data.empty()) {
      const uint32_t window = ssh_channel_window_size(channel_);
      if (window == 0) {
        if (auto error = wait_for_window()) return error;
        continue;
      }
      const auto piece = std::min<size_t>({data.size(), size_t{1} << 16, window});
      int n = ssh_channel_write(channel_, data.data(), static_cast<uint32_t>(piece));
      if (n < 0) return broken("sending to the command failed");
      data.remove_prefix(static_cast<size_t>(n));
    }
    return std::nullopt;
  }

  void while_waiting(std::function<bool()> hook) override { hook_ = std::move(hook); }

  Result<StreamRead, TransportError> read(int wait_ms) override {
    if (!pending_.empty()) return StreamRead{std::exchange(pending_, {}), false};
    drain_stderr();
    // As in SshStream: poll first, since a read's 0 means "nothing yet" or
    // "end" depending on the libssh version.
    int available = ssh_channel_poll_timeout(channel_, wait_ms, 0);
    if (available == SSH_EOF) return end();
    if (available == SSH_ERROR) return unexpected(broken("reading the command's output failed"));
    drain_stderr();
    if (available == 0) return StreamRead{};
    std::string buf(static_cast<size_t>(std::min(available, 65536)), '\0');
    int n = ssh_channel_read_nonblocking(channel_, buf.data(), static_cast<uint32_t>(buf.size()), 0);
    if (n == SSH_EOF) return end();
    if (n < 0) return unexpected(broken("reading the command's output failed"));
    buf.resize(static_cast<size_t>(n));
    return StreamRead{std::move(buf), false};
  }

  void close_input() override {
    if (!input_closed_) ssh_channel_send_eof(channel_);
    input_closed_ = true;
  }

  std::string err() const override { return err_; }

  std::optional<int> exit_code() override {
    if (!eof_) return std::nullopt;
    // libssh waits (up to the session's timeout) for the exit-status or
    // exit-signal message that sshd sends before closing the channel.
    const int status = ssh_channel_get_exit_status(channel_);
    if (status >= 0) return status;
    return std::nullopt;
  }

 private:
  // Until the worker opens the window again: what has come is handled at
  // once (a window adjust among it; the command's output is kept for
  // read()), then the session's socket is waited on, and the hook called
  // each second the window stays shut.
  std::optional<TransportError> wait_for_window() {
    using Clock = std::chrono::steady_clock;
    auto hook_at = Clock::now() + std::chrono::seconds(1);
    while (ssh_channel_window_size(channel_) == 0) {
      const int available = ssh_channel_poll(channel_, 0);  // handles the packets that have come
      if (available == SSH_ERROR) return broken("sending to the command failed");
      if (available == SSH_EOF) return broken("the command stopped reading");
      if (available > 0) {
        std::string buf(static_cast<size_t>(std::min(available, 65536)), '\0');
        const int n = ssh_channel_read_nonblocking(channel_, buf.data(), static_cast<uint32_t>(buf.size()), 0);
        if (n < 0) return broken("reading the command's output failed");
        pending_.append(buf.data(), static_cast<size_t>(n));
        continue;
      }
      drain_stderr();
      if (ssh_channel_window_size(channel_) > 0) break;
      const auto now = Clock::now();
      if (now >= hook_at) {
        if (hook_ && !hook_()) {
          return TransportError{ErrorKind::interrupted, "interrupted while the worker was not taking what was sent"};
        }
        hook_at = now + std::chrono::seconds(1);
      }
      pollfd socket{ssh_get_fd(session_), POLLIN, 0};
      ::poll(&socket, 1,
             static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(hook_at - now).count()) + 1);
    }
    return std::nullopt;
  }

  StreamRead end() {
    drain_stderr();
    eof_ = true;
    return StreamRead{{}, true};
  }
  void drain_stderr() {
    char buf[4096];
    while (ssh_channel_poll(channel_, 1) > 0) {
      int n = ssh_channel_read_nonblocking(channel_, buf, sizeof buf, 1);
      if (n <= 0) break;
      if (err_.size() < (1u << 20)) err_.append(buf, static_cast<size_t>(n));
    }
  }
  TransportError broken(const char* what) const {
    return {ErrorKind::channel, fmt::format("{}: {} — the worker may have dropped the connection", what,
                                            ssh_get_error(session_))};
  }

  ssh_session session_;
  ssh_channel channel_;
  std::string err_;
  std::string pending_;  // the command's output read while a write waited
  std::function<bool()> hook_;
  bool input_closed_ = false;
  bool eof_ = false;
};

}  // namespace

Result<std::unique_ptr<ExecStream>, TransportError> SshConnection::open_exec(const std::string& command_line,
                                                                            const CancelToken& cancel) {
  if (cancel.cancelled()) return unexpected(TransportError{ErrorKind::interrupted, interrupted_by()});
  ssh_channel channel = ssh_channel_new(session_);
  if (channel == nullptr) {
    return unexpected(TransportError{ErrorKind::channel, fmt::format("cannot open channel: {}", ssh_get_error(session_))});
  }
  if (ssh_channel_open_session(channel) != SSH_OK || ssh_channel_request_exec(channel, command_line.c_str()) != SSH_OK) {
    TransportError error{ErrorKind::channel,
                         fmt::format("cannot start a command: {} — the worker may have dropped the connection",
                                     ssh_get_error(session_))};
    ssh_channel_free(channel);
    return unexpected(std::move(error));
  }
  return std::unique_ptr<ExecStream>(new SshExecStream(session_, channel));
}

}  // namespace tpurun

// Connection::open_stream over SSH: a direct-tcpip channel (RFC 4254 §7.2),
// what `ssh -W host:port` asks for. The worker's sshd makes the TCP
// connection, so "localhost" is the worker's own loopback.
#include <libssh/libssh.h>

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "transport/ssh_connection.hpp"

namespace tpurun {
namespace {

class SshStream : public ByteStream {
 public:
  SshStream(ssh_session session, ssh_channel channel) : session_(session), channel_(channel) {}
  ~SshStream() override {
    if (ssh_channel_is_open(channel_)) {
      ssh_channel_send_eof(channel_);
      ssh_channel_close(channel_);
    }
    ssh_channel_free(channel_);
  }
  SshStream(const SshStream&) = delete;
  SshStream& operator=(const SshStream&) = delete;

  std::optional<TransportError> write(std::string_view data) override {
    while (!data.empty()) {
      int n = ssh_channel_write(channel_, data.data(), static_cast<uint32_t>(std::min<size_t>(data.size(), 1 << 20)));
      if (n < 0) return broken("stream write failed");
      data.remove_prefix(static_cast<size_t>(n));
    }
    return std::nullopt;
  }

  Result<StreamRead, TransportError> read(int wait_ms) override {
    // Poll first: ssh_channel_read_timeout's 0 means both "nothing yet" and
    // "end of stream" depending on the libssh version; the poll tells them apart.
    int available = ssh_channel_poll_timeout(channel_, wait_ms, 0);
    if (available == SSH_EOF) return StreamRead{{}, true};
    if (available == SSH_ERROR) return unexpected(broken("stream read failed"));
    if (available == 0) return StreamRead{};
    std::string buf(static_cast<size_t>(std::min(available, 65536)), '\0');
    int n = ssh_channel_read_nonblocking(channel_, buf.data(), static_cast<uint32_t>(buf.size()), 0);
    if (n == SSH_EOF) return StreamRead{{}, true};
    if (n < 0) return unexpected(broken("stream read failed"));
    buf.resize(static_cast<size_t>(n));
    return StreamRead{std::move(buf), false};
  }

 private:
  TransportError broken(const char* what) const {
    return {ErrorKind::channel, fmt::format("{}: {} — the worker may have dropped the connection", what,
                                            ssh_get_error(session_))};
  }

  ssh_session session_;
  ssh_channel channel_;
};

// sshd answers a direct-tcpip open it cannot complete with
// SSH_MSG_CHANNEL_OPEN_FAILURE: reason 1 when forwarding is prohibited
// (AllowTcpForwarding no), 2 when the connect failed, with strerror() as the
// text (OpenSSH channels.c); libssh puts both in its error string as
// "Channel opening failure: channel N error (CODE) TEXT".
TransportError open_failure(ssh_session session, const std::string& host, int port) {
  const std::string detail = ssh_get_error(session);
  const std::string target = fmt::format("{}:{}", host, port);
  if (detail.find("error (2)") != std::string::npos && detail.find("refused") != std::string::npos) {
    return {ErrorKind::refused, fmt::format("nothing listens on the worker's {} (connection refused)", target)};
  }
  if (detail.find("error (1)") != std::string::npos) {
    return {ErrorKind::channel,
            fmt::format("the worker's sshd does not allow forwarding to {} ({}) — AllowTcpForwarding is off in "
                        "its sshd_config",
                        target, detail)};
  }
  if (detail.find("Channel opening failure") != std::string::npos) {
    return {ErrorKind::connect, fmt::format("the worker could not connect to {}: {}", target, detail)};
  }
  return {ErrorKind::channel,
          fmt::format("cannot open a channel to {}: {} — the worker may have dropped the connection", target, detail)};
}

}  // namespace

Result<std::unique_ptr<ByteStream>, TransportError> SshConnection::open_stream(const std::string& host, int port,
                                                                               const CancelToken& cancel) {
  if (cancel.cancelled()) return unexpected(TransportError{ErrorKind::interrupted, interrupted_by()});
  ssh_channel channel = ssh_channel_new(session_);
  if (channel == nullptr) {
    return unexpected(TransportError{ErrorKind::channel, fmt::format("cannot open channel: {}", ssh_get_error(session_))});
  }
  // The originator fields are informational for sshd; ssh -W sends 127.0.0.1:0 too.
  if (ssh_channel_open_forward(channel, host.c_str(), port, "127.0.0.1", 0) != SSH_OK) {
    TransportError error = open_failure(session_, host, port);
    ssh_channel_free(channel);
    return unexpected(std::move(error));
  }
  return std::unique_ptr<ByteStream>(new SshStream(session_, channel));
}

}  // namespace tpurun

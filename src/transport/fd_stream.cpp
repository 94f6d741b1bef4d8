#include "transport/fd_stream.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

namespace tpurun {

std::optional<TransportError> FdStream::write(std::string_view data) {
  while (!data.empty()) {
    // MSG_NOSIGNAL: a peer that went away is an error value, not SIGPIPE.
    ssize_t n = ::send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return TransportError{ErrorKind::channel, fmt::format("stream write failed: {}", std::strerror(errno))};
    data.remove_prefix(static_cast<size_t>(n));
  }
  return std::nullopt;
}

Result<StreamRead, TransportError> FdStream::read(int wait_ms) {
  pollfd p{fd_.get(), POLLIN, 0};
  int ready = ::poll(&p, 1, wait_ms);
  if (ready < 0 && errno != EINTR) {
    return unexpected(TransportError{ErrorKind::channel, fmt::format("stream poll failed: {}", std::strerror(errno))});
  }
  if (ready <= 0) return StreamRead{};
  char buf[16384];
  ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return StreamRead{};
  if (n < 0) {
    return unexpected(TransportError{ErrorKind::channel, fmt::format("stream read failed: {}", std::strerror(errno))});
  }
  if (n == 0) return StreamRead{{}, true};
  return StreamRead{std::string(buf, static_cast<size_t>(n)), false};
}

Result<std::unique_ptr<ByteStream>, TransportError> connect_tcp_stream(const std::string& host, int port,
                                                                       const CancelToken& cancel) {
  if (cancel.cancelled()) return unexpected(TransportError{ErrorKind::interrupted, interrupted_by() + " before connecting"});
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return unexpected(TransportError{ErrorKind::connect, fmt::format("cannot resolve {}: {}", host, gai_strerror(rc))});
  }
  // Every address in turn, as sshd does for direct-tcpip ("localhost" is ::1 and 127.0.0.1).
  int last_errno = ECONNREFUSED;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    UniqueFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd) {
      last_errno = errno;
      continue;
    }
    if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) == 0) {
      ::freeaddrinfo(found);
      return std::unique_ptr<ByteStream>(new FdStream(std::move(fd)));
    }
    last_errno = errno;
  }
  ::freeaddrinfo(found);
  return unexpected(TransportError{last_errno == ECONNREFUSED ? ErrorKind::refused : ErrorKind::connect,
                                   fmt::format("connect to {}:{}: {}", host, port, std::strerror(last_errno))});
}

}  // namespace tpurun

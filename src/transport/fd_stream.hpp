#pragma once
// A ByteStream over a socket this process holds: the local transport's TCP
// connections, and the in-memory pairs that unit tests put a server behind.
#include <memory>
#include <string>

#include "tpurun/transport/transport.hpp"
#include "tpurun/util/unique_fd.hpp"

namespace tpurun {

class FdStream : public ByteStream {
 public:
  explicit FdStream(UniqueFd fd) : fd_(std::move(fd)) {}
  std::optional<TransportError> write(std::string_view data) override;
  Result<StreamRead, TransportError> read(int wait_ms) override;

 private:
  UniqueFd fd_;
};

// Connects to host:port from this machine. Nothing listening is `refused`.
Result<std::unique_ptr<ByteStream>, TransportError> connect_tcp_stream(const std::string& host, int port,
                                                                       const CancelToken& cancel);

}  // namespace tpurun

#include "tpurun/transport/transport.hpp"

namespace tpurun {

Result<std::unique_ptr<ByteStream>, TransportError> Connection::open_stream(const std::string& host, int port,
                                                                            const CancelToken&) {
  return unexpected(TransportError{
      ErrorKind::channel, "this transport cannot open a stream to " + host + ":" + std::to_string(port)});
}

Result<std::unique_ptr<ExecStream>, TransportError> Connection::open_exec(const std::string&, const CancelToken&) {
  return unexpected(TransportError{ErrorKind::channel, "this transport cannot hold a command open"});
}

}  // namespace tpurun

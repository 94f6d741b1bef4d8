#include "tpurun/transport/transport.hpp"

namespace tpurun {

Result<std::unique_ptr<ByteStream>, TransportError> Connection::open_stream(const std::string& host, int port,
                                                                            const CancelToken&) {
  return unexpected(TransportError{
      ErrorKind::channel, "this transport cannot open a stream to " + host + ":" + std::to_string(port)});
}

}  // namespace tpurun

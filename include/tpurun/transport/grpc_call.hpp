#pragma once
// gRPC unary calls over a ByteStream: HTTP/2 by nghttp2 (h2c with prior
// knowledge, which is what gRPC's insecure and local channel credentials put
// on the wire), gRPC's 5-byte message framing, and the status from the
// trailers. Only what a unary client needs; messages are opaque bytes here.
#include <string>
#include <vector>

#include "tpurun/transport/transport.hpp"
#include "tpurun/util/cancel.hpp"
#include "tpurun/util/result.hpp"

namespace tpurun {

// gRPC status codes (grpc/doc/statuscodes.md).
enum class GrpcCode {
  ok = 0, cancelled = 1, unknown = 2, invalid_argument = 3, deadline_exceeded = 4, not_found = 5,
  already_exists = 6, permission_denied = 7, resource_exhausted = 8, failed_precondition = 9, aborted = 10,
  out_of_range = 11, unimplemented = 12, internal = 13, unavailable = 14, data_loss = 15, unauthenticated = 16,
};
const char* grpc_code_name(GrpcCode code);  // "UNAVAILABLE"

struct GrpcStatus {
  GrpcCode code = GrpcCode::ok;
  std::string message;  // grpc-message, percent-decoded; or what the client saw
  bool ok() const { return code == GrpcCode::ok; }
};

struct GrpcCall {
  std::string path;     // "/package.Service/Method"
  std::string request;  // the serialized request message
};

struct GrpcReply {
  GrpcStatus status;
  std::string response;  // the serialized response message, when status is OK
};

struct GrpcOptions {
  std::string authority = "localhost";  // :authority, as the server's own clients send it
  int deadline_ms = 5000;               // sent as grpc-timeout and kept here
  std::string user_agent = "tpurun";
};

// Runs the calls at once, as concurrent streams of one HTTP/2 connection (one
// round trip for all), and returns one reply per call, in order. Everything
// is a status per call, as a gRPC client reports it: what the server said,
// DEADLINE_EXCEEDED, UNAVAILABLE when the connection closed or broke. The
// error is only Ctrl-C.
Result<std::vector<GrpcReply>, TransportError> grpc_unary_calls(ByteStream& stream,
                                                                const std::vector<GrpcCall>& calls,
                                                                const GrpcOptions& options,
                                                                const CancelToken& cancel);

// The pieces, for tests: gRPC's percent-decoding of grpc-message, and the
// status a client derives from what it received (HTTP/2 reset code, :status,
// content-type, grpc-status/grpc-message, the body).
std::string grpc_percent_decode(std::string_view text);
struct GrpcReceived {
  int http_status = 0;         // 0: no :status received
  std::string content_type;
  bool have_grpc_status = false;
  std::string grpc_status;     // as sent
  std::string grpc_message;    // as sent (percent-encoded)
  std::string body;            // DATA, still framed
  uint32_t reset_code = 0;     // RST_STREAM error code, 0 when the stream ended normally
};
GrpcReply grpc_reply_from(const GrpcReceived& received);

}  // namespace tpurun

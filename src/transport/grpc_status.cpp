// How a gRPC client turns what it received on an HTTP/2 stream into a status:
// grpc/doc/PROTOCOL-HTTP2.md (framing, trailers, RST_STREAM codes) and
// grpc/doc/http-grpc-status-mapping.md (HTTP statuses without grpc-status).
#include <charconv>
#include <fmt/format.h>

#include "tpurun/transport/grpc_call.hpp"

namespace tpurun {
namespace {

GrpcCode from_http_status(int status) {
  switch (status) {
    case 400: return GrpcCode::internal;
    case 401: return GrpcCode::unauthenticated;
    case 403: return GrpcCode::permission_denied;
    case 404: return GrpcCode::unimplemented;
    case 429:
    case 502:
    case 503:
    case 504: return GrpcCode::unavailable;
    default: return GrpcCode::unknown;
  }
}

GrpcCode from_reset_code(uint32_t code) {
  switch (code) {
    case 0x7: return GrpcCode::unavailable;         // REFUSED_STREAM: safe to retry
    case 0x8: return GrpcCode::cancelled;           // CANCEL
    case 0xb: return GrpcCode::resource_exhausted;  // ENHANCE_YOUR_CALM
    case 0xc: return GrpcCode::permission_denied;   // INADEQUATE_SECURITY
    default: return GrpcCode::internal;
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

GrpcReply failed(GrpcCode code, std::string message) { return {{code, std::move(message)}, {}}; }

}  // namespace

const char* grpc_code_name(GrpcCode code) {
  static const char* const names[] = {
      "OK",           "CANCELLED",          "UNKNOWN",      "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
      "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
      "OUT_OF_RANGE", "UNIMPLEMENTED",      "INTERNAL",     "UNAVAILABLE",      "DATA_LOSS",         "UNAUTHENTICATED"};
  const auto i = static_cast<size_t>(code);
  return i < std::size(names) ? names[i] : "UNKNOWN";
}

// grpc-message is percent-encoded UTF-8; a malformed escape stays as it is.
std::string grpc_percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      int hi = hex_value(text[i + 1]);
      int lo = hex_value(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

GrpcReply grpc_reply_from(const GrpcReceived& r) {
  if (r.have_grpc_status) {
    int code = -1;
    auto [end, ec] = std::from_chars(r.grpc_status.data(), r.grpc_status.data() + r.grpc_status.size(), code);
    if (ec != std::errc() || end != r.grpc_status.data() + r.grpc_status.size() || code < 0 || code > 16) {
      return failed(GrpcCode::unknown, fmt::format("the server sent grpc-status '{}'", r.grpc_status));
    }
    if (code != 0) return failed(static_cast<GrpcCode>(code), grpc_percent_decode(r.grpc_message));
  } else if (r.reset_code != 0) {
    return failed(from_reset_code(r.reset_code),
                  fmt::format("the server reset the stream (HTTP/2 error code {})", r.reset_code));
  } else if (r.http_status == 0) {
    return failed(GrpcCode::internal, "the stream ended without response headers");
  } else if (r.http_status != 200) {
    return failed(from_http_status(r.http_status), fmt::format("HTTP status {} without a gRPC status", r.http_status));
  } else {
    return failed(GrpcCode::unknown, "the stream ended without a grpc-status");
  }
  if (r.http_status != 200) {
    return failed(GrpcCode::internal, fmt::format("grpc-status 0 with HTTP status {}", r.http_status));
  }
  if (r.content_type.rfind("application/grpc", 0) != 0) {
    return failed(GrpcCode::unknown, fmt::format("not a gRPC response (content-type '{}')", r.content_type));
  }
  // Length-Prefixed-Message: 1 byte compressed flag, 4 bytes big-endian length, the message.
  const std::string& b = r.body;
  if (b.empty()) return failed(GrpcCode::internal, "a unary call ended without a response message");
  if (b.size() < 5) return failed(GrpcCode::internal, "the response message's frame header is cut short");
  const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(b[i])); };
  if (byte(0) == 1) return failed(GrpcCode::internal, "the response is compressed, but tpurun asked for none");
  if (byte(0) != 0) return failed(GrpcCode::internal, fmt::format("bad message flag {}", byte(0)));
  const uint64_t length = (byte(1) << 24) | (byte(2) << 16) | (byte(3) << 8) | byte(4);
  if (5 + length > b.size()) {
    return failed(GrpcCode::internal,
                  fmt::format("the response message is cut short ({} of {} bytes)", b.size() - 5, length));
  }
  if (5 + length < b.size()) return failed(GrpcCode::internal, "more than one response message for a unary call");
  return {{}, b.substr(5)};
}

}  // namespace tpurun

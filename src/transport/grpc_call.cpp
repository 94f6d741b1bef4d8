// grpc_unary_calls: an nghttp2 client session driven by hand over a
// ByteStream. nghttp2 turns frames into bytes (mem_send) and bytes into
// callbacks (mem_recv), so the SSH channel needs no socket, fd or thread.
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <optional>

#include "tpurun/transport/grpc_call.hpp"

// nghttp2 1.61 deprecated the ssize_t API in favour of *2 functions that older
// releases (Debian 11's 1.43, Ubuntu 20.04's 1.40) lack; the old API stays.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace tpurun {
namespace {

using Clock = std::chrono::steady_clock;

struct CallState {
  const GrpcCall* call = nullptr;
  std::string framed_request;  // 5-byte prefix + message
  size_t sent = 0;
  int32_t stream_id = -1;
  GrpcReceived received;
  bool closed = false;
  std::optional<GrpcStatus> local;  // decided here: deadline, connection lost
};

struct Session {
  std::vector<CallState>* calls = nullptr;
  CallState* find(int32_t stream_id) {
    for (CallState& c : *calls) {
      if (c.stream_id == stream_id) return &c;
    }
    return nullptr;
  }
};

ssize_t read_request(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                     nghttp2_data_source* source, void*) {
  auto* c = static_cast<CallState*>(source->ptr);
  const size_t n = std::min(length, c->framed_request.size() - c->sent);
  std::memcpy(buf, c->framed_request.data() + c->sent, n);
  c->sent += n;
  if (c->sent == c->framed_request.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

int on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
              const uint8_t* value, size_t valuelen, uint8_t, void* user) {
  CallState* c = static_cast<Session*>(user)->find(frame->hd.stream_id);
  if (c == nullptr) return 0;
  const std::string_view n(reinterpret_cast<const char*>(name), namelen);
  const std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  GrpcReceived& r = c->received;
  // Headers, then trailers; a "trailers-only" reply carries both in one block.
  if (n == ":status") {
    r.http_status = 0;
    for (char ch : v) r.http_status = r.http_status * 10 + (ch - '0');
  } else if (n == "content-type") {
    r.content_type = v;
  } else if (n == "grpc-status") {
    r.have_grpc_status = true;
    r.grpc_status = v;
  } else if (n == "grpc-message") {
    r.grpc_message = v;
  }
  return 0;
}

int on_data(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len, void* user) {
  CallState* c = static_cast<Session*>(user)->find(stream_id);
  // Cap what one reply may hold, as gRPC does (4 MiB by default).
  if (c != nullptr && c->received.body.size() + len <= (4u << 20) + 5) {
    c->received.body.append(reinterpret_cast<const char*>(data), len);
  } else if (c != nullptr) {
    c->local = GrpcStatus{GrpcCode::resource_exhausted, "the response is larger than 4 MiB"};
  }
  return 0;
}

int on_close(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user) {
  CallState* c = static_cast<Session*>(user)->find(stream_id);
  if (c != nullptr) {
    c->closed = true;
    c->received.reset_code = error_code;
  }
  return 0;
}

struct SessionOwner {
  nghttp2_session* s = nullptr;
  ~SessionOwner() {
    if (s != nullptr) nghttp2_session_del(s);
  }
};

std::string frame(const std::string& message) {
  std::string out(5, '\0');
  const auto n = static_cast<uint32_t>(message.size());
  out[1] = static_cast<char>(n >> 24);
  out[2] = static_cast<char>(n >> 16);
  out[3] = static_cast<char>(n >> 8);
  out[4] = static_cast<char>(n);
  return out + message;
}

// Views of literals and of strings that outlive the submit call (nghttp2 copies them).
nghttp2_nv header(std::string_view name, std::string_view value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

// Writes whatever nghttp2 has queued.
std::optional<TransportError> flush(nghttp2_session* s, ByteStream& stream) {
  for (;;) {
    const uint8_t* data = nullptr;
    ssize_t n = nghttp2_session_mem_send(s, &data);
    if (n < 0) return TransportError{ErrorKind::local, fmt::format("HTTP/2: {}", nghttp2_strerror(static_cast<int>(n)))};
    if (n == 0) return std::nullopt;
    if (auto err = stream.write(std::string_view(reinterpret_cast<const char*>(data), static_cast<size_t>(n)))) {
      return err;
    }
  }
}

void settle(std::vector<CallState>& calls, GrpcCode code, const std::string& message) {
  for (CallState& c : calls) {
    if (!c.closed && !c.local) c.local = GrpcStatus{code, message};
  }
}

}  // namespace

Result<std::vector<GrpcReply>, TransportError> grpc_unary_calls(ByteStream& stream,
                                                                const std::vector<GrpcCall>& calls,
                                                                const GrpcOptions& options,
                                                                const CancelToken& cancel) {
  std::vector<CallState> state(calls.size());
  Session session{&state};

  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) {
    return unexpected(TransportError{ErrorKind::local, "out of memory starting HTTP/2"});
  }
  nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_close);
  SessionOwner owner;
  int rv = nghttp2_session_client_new(&owner.s, callbacks, &session);
  nghttp2_session_callbacks_del(callbacks);
  if (rv != 0) return unexpected(TransportError{ErrorKind::local, "out of memory starting HTTP/2"});

  // The client preface and SETTINGS go out with the requests, without waiting
  // for the server's SETTINGS (RFC 9113 §3.4): one round trip in all.
  nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}};
  nghttp2_submit_settings(owner.s, NGHTTP2_FLAG_NONE, settings, 1);

  const std::string post = "POST", scheme = "http", grpc = "application/grpc", te = "trailers";
  const std::string timeout = fmt::format("{}m", std::max(1, options.deadline_ms));
  for (size_t i = 0; i < calls.size(); ++i) {
    CallState& c = state[i];
    c.call = &calls[i];
    c.framed_request = frame(calls[i].request);
    const nghttp2_nv headers[] = {
        header(":method", post),         header(":scheme", scheme),
        header(":path", calls[i].path),  header(":authority", options.authority),
        header("content-type", grpc),    header("te", te),
        header("grpc-timeout", timeout), header("user-agent", options.user_agent),
    };
    nghttp2_data_provider body{};
    body.source.ptr = &c;
    body.read_callback = read_request;
    c.stream_id = nghttp2_submit_request(owner.s, nullptr, headers, std::size(headers), &body, nullptr);
    if (c.stream_id < 0) {
      c.local = GrpcStatus{GrpcCode::internal, fmt::format("HTTP/2: {}", nghttp2_strerror(c.stream_id))};
      c.closed = true;
    }
  }

  const auto deadline = Clock::now() + std::chrono::milliseconds(options.deadline_ms);
  const auto pending = [&] {
    for (const CallState& c : state) {
      if (!c.closed && !c.local) return true;
    }
    return false;
  };
  while (pending()) {
    if (cancel.cancelled()) return unexpected(TransportError{ErrorKind::interrupted, interrupted_by()});
    if (auto err = flush(owner.s, stream)) {
      settle(state, err->kind == ErrorKind::local ? GrpcCode::internal : GrpcCode::unavailable, err->message);
      break;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      settle(state, GrpcCode::deadline_exceeded,
             fmt::format("no reply within {:.1f}s", options.deadline_ms / 1000.0));
      break;
    }
    auto got = stream.read(static_cast<int>(std::min<long long>(left, 200)));
    if (!got) {
      settle(state, GrpcCode::unavailable, got.error().message);
      break;
    }
    if (got->eof) {
      settle(state, GrpcCode::unavailable, "the server closed the connection before replying");
      break;
    }
    if (got->data.empty()) continue;
    ssize_t used = nghttp2_session_mem_recv(owner.s, reinterpret_cast<const uint8_t*>(got->data.data()),
                                            got->data.size());
    if (used < 0) {
      settle(state, GrpcCode::internal,
             fmt::format("HTTP/2 protocol error: {}", nghttp2_strerror(static_cast<int>(used))));
      break;
    }
  }
  // A polite end (GOAWAY); the stream may already be gone, which is fine.
  nghttp2_session_terminate_session(owner.s, NGHTTP2_NO_ERROR);
  (void)flush(owner.s, stream);

  std::vector<GrpcReply> replies;
  replies.reserve(state.size());
  for (const CallState& c : state) {
    replies.push_back(c.local ? GrpcReply{*c.local, {}} : grpc_reply_from(c.received));
  }
  return replies;
}

}  // namespace tpurun

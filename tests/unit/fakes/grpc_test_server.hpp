#pragma once
// A gRPC server for unit tests: an nghttp2 server session on one end of a
// socketpair, in a thread; the client gets the other end as a ByteStream. Each
// request is answered as the test scripts it: a normal reply, trailers-only,
// an HTTP error, a reset stream, a closed connection, or silence.
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "transport/fd_stream.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace tpurun::testing {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct ServerReply {
  int http_status = 200;
  std::string content_type = "application/grpc";
  std::string body;                              // DATA as sent; grpc_frame() makes one message
  Headers trailers = {{"grpc-status", "0"}};
  bool trailers_only = false;                    // one HEADERS block (with the trailers) that ends the stream
  uint32_t reset = 0;                            // RST_STREAM with this code instead
  bool close_connection = false;                 // close the socket instead
  bool silent = false;                           // never answer
};

inline std::string grpc_frame(const std::string& message, char flag = 0) {
  std::string out(1, flag);
  const auto n = static_cast<uint32_t>(message.size());
  for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<char>(n >> shift));
  return out + message;
}

struct ReceivedRequest {
  Headers headers;
  std::string message;  // the request message, unframed
  std::string header(const std::string& name) const {
    for (const auto& [n, v] : headers) {
      if (n == name) return v;
    }
    return "";
  }
};

class GrpcTestServer {
 public:
  using Handler = std::function<ServerReply(const ReceivedRequest&)>;

  explicit GrpcTestServer(Handler handler) : handler_(std::move(handler)) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) std::abort();
    client_fd_ = fds[0];
    server_fd_ = fds[1];
    thread_ = std::thread([this] { serve(); });
  }
  ~GrpcTestServer() {
    stop_ = true;
    thread_.join();
    if (server_fd_ >= 0) ::close(server_fd_);
    if (client_fd_ >= 0) ::close(client_fd_);
  }

  // The client's end; call once.
  std::unique_ptr<ByteStream> client_stream() {
    return std::make_unique<FdStream>(UniqueFd(std::exchange(client_fd_, -1)));
  }

  std::vector<ReceivedRequest> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  struct StreamState {
    ReceivedRequest request;
    std::string body;  // framed, as received
    ServerReply reply;
    std::string out;   // the reply's DATA still to send
    size_t sent = 0;
  };

  static GrpcTestServer* self(void* user) { return static_cast<GrpcTestServer*>(user); }

  static int on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type == NGHTTP2_HEADERS) self(user)->streams_[frame->hd.stream_id];
    return 0;
  }
  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                       const uint8_t* value, size_t valuelen, uint8_t, void* user) {
    self(user)->streams_[frame->hd.stream_id].request.headers.emplace_back(
        std::string(reinterpret_cast<const char*>(name), namelen),
        std::string(reinterpret_cast<const char*>(value), valuelen));
    return 0;
  }
  static int on_data(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t len, void* user) {
    self(user)->streams_[id].body.append(reinterpret_cast<const char*>(data), len);
    return 0;
  }
  static ssize_t read_reply(nghttp2_session* session, int32_t id, uint8_t* buf, size_t length, uint32_t* flags,
                            nghttp2_data_source* source, void*) {
    auto* s = static_cast<StreamState*>(source->ptr);
    const size_t n = std::min(length, s->out.size() - s->sent);
    std::memcpy(buf, s->out.data() + s->sent, n);
    s->sent += n;
    if (s->sent == s->out.size()) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      std::vector<nghttp2_nv> nv;
      for (const auto& [k, v] : s->reply.trailers) nv.push_back(make_nv(k, v));
      if (!nv.empty()) {
        *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        nghttp2_submit_trailer(session, id, nv.data(), nv.size());
      }
    }
    return static_cast<ssize_t>(n);
  }
  static int on_frame_recv(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
    const bool request_done = (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
                              (frame->hd.flags & NGHTTP2_FLAG_END_STREAM);
    if (request_done) self(user)->answer(session, frame->hd.stream_id);
    return 0;
  }

  // Views: of literals, or of strings that outlive the submit call (nghttp2 copies them).
  static nghttp2_nv make_nv(std::string_view k, std::string_view v) {
    return {reinterpret_cast<uint8_t*>(const_cast<char*>(k.data())),
            reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), k.size(), v.size(), NGHTTP2_NV_FLAG_NONE};
  }

  void answer(nghttp2_session* session, int32_t id) {
    StreamState& s = streams_[id];
    if (s.body.size() >= 5) s.request.message = s.body.substr(5);
    {
      std::lock_guard lock(mu_);
      requests_.push_back(s.request);
    }
    s.reply = handler_(s.request);
    const ServerReply& r = s.reply;
    if (r.silent) return;
    if (r.close_connection) {
      close_now_ = true;
      return;
    }
    if (r.reset != 0) {
      nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, id, r.reset);
      return;
    }
    status_text_[id] = std::to_string(r.http_status);
    std::vector<nghttp2_nv> nv{make_nv(":status", status_text_[id])};
    if (!r.content_type.empty()) nv.push_back(make_nv("content-type", r.content_type));
    if (r.trailers_only) {
      for (const auto& [k, v] : r.trailers) nv.push_back(make_nv(k, v));
      nghttp2_submit_response(session, id, nv.data(), nv.size(), nullptr);
      return;
    }
    s.out = r.body;
    nghttp2_data_provider data{};
    data.source.ptr = &s;
    data.read_callback = read_reply;
    nghttp2_submit_response(session, id, nv.data(), nv.size(), &data);
  }

  void serve() {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session* session = nullptr;
    nghttp2_session_server_new(&session, cb, this);
    nghttp2_session_callbacks_del(cb);
    nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, nullptr, 0);
    while (!stop_ && !close_now_) {
      const uint8_t* out = nullptr;
      ssize_t n;
      while ((n = nghttp2_session_mem_send(session, &out)) > 0) {
        if (::send(server_fd_, out, static_cast<size_t>(n), MSG_NOSIGNAL) < 0) break;
      }
      pollfd p{server_fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      char buf[16384];
      ssize_t got = ::recv(server_fd_, buf, sizeof buf, 0);
      if (got <= 0) break;
      nghttp2_session_mem_recv(session, reinterpret_cast<const uint8_t*>(buf), static_cast<size_t>(got));
    }
    nghttp2_session_del(session);
    if (close_now_) {
      ::close(server_fd_);
      server_fd_ = -1;
    }
  }

  Handler handler_;
  int client_fd_ = -1;
  int server_fd_ = -1;
  std::atomic<bool> stop_{false};
  bool close_now_ = false;
  std::map<int32_t, StreamState> streams_;
  std::map<int32_t, std::string> status_text_;
  mutable std::mutex mu_;
  std::vector<ReceivedRequest> requests_;
  std::thread thread_;
};

}  // namespace tpurun::testing

#pragma GCC diagnostic pop

#include "transport/keeper/keeper_connection.hpp"

#include <chrono>

#include <fmt/format.h>

namespace tpurun::keeper {
namespace {

using SteadyClock = std::chrono::steady_clock;

// A stream of the keeper's session, seen from here: each call a round trip.
class KeptStream : public ExecStream {
 public:
  KeptStream(KeeperConnection& connection, int id) : connection_(connection), id_(id) {}
  ~KeptStream() override {
    connection_.settle();
    (void)connection_.write_error(id_);
    connection_.tell(FrameType::s_free, {{"id", id_}});
  }

  // Writes are pipelined (KeeperConnection::send_write): a new piece goes
  // out only while less than kWindow bytes are unanswered, so the keeper
  // holds little; an error comes back from a later write or read of this
  // stream, as a broken pipe would.
  std::optional<TransportError> write(std::string_view data) override {
    constexpr size_t kPiece = size_t{4} << 20;
    constexpr size_t kWindow = size_t{512} << 10;  // eight of the push's 64 KiB writes
    do {
      while (connection_.unsettled_bytes() >= kWindow) connection_.settle(true);
      if (auto error = connection_.write_error(id_)) return error;
      const std::string_view piece = data.substr(0, kPiece);
      if (auto error = connection_.send_write(id_, piece, hook_)) return error;
      data.remove_prefix(piece.size());
    } while (!data.empty());
    return connection_.write_error(id_);
  }

  Result<StreamRead, TransportError> read(int wait_ms) override {
    connection_.settle();
    if (auto error = connection_.write_error(id_)) return unexpected(*error);
    auto r = connection_.call(FrameType::s_read, {{"id", id_}, {"wait_ms", wait_ms}}, {}, wait_ms, {});
    if (!r) return unexpected(r.error());
    if (r->type == FrameType::error) return unexpected(error_from_json(r->head));
    return StreamRead{std::move(r->data), r->head.value("eof", false)};
  }

  void while_waiting(std::function<bool()> hook) override { hook_ = std::move(hook); }

  void close_input() override { (void)connection_.call(FrameType::s_close_input, {{"id", id_}}, {}, 0, {}); }

  std::string err() const override {
    auto r = connection_.call(FrameType::s_err, {{"id", id_}}, {}, 0, {});
    return r && r->type == FrameType::done ? r->head.value("text", "") : "";
  }

  std::optional<int> exit_code() override {
    auto r = connection_.call(FrameType::s_exit, {{"id", id_}}, {}, 0, {});
    if (!r || r->type != FrameType::done || !r->head.contains("code") || r->head["code"].is_null()) {
      return std::nullopt;
    }
    return r->head["code"].get<int>();
  }

 private:
  KeeperConnection& connection_;
  int id_;
  std::function<bool()> hook_;
};

}  // namespace

TransportError error_from_json(const nlohmann::json& head) {
  const int kind = head.value("kind", static_cast<int>(ErrorKind::channel));
  const bool known = kind >= 0 && kind <= static_cast<int>(ErrorKind::refused);
  return {known ? static_cast<ErrorKind>(kind) : ErrorKind::channel, head.value("message", "the keeper failed")};
}

TransportError KeeperConnection::gone(const char* what) {
  dead_ = true;
  return {ErrorKind::channel,
          fmt::format("the connection keeper (pid {}) went away {}; the command may have run on the worker — "
                      "the next command connects again",
                      d_.pid, what)};
}

void KeeperConnection::tell(FrameType type, const nlohmann::json& head) {
  if (!dead_ && !d_.writer->send(type, head)) dead_ = true;
}

std::optional<TransportError> KeeperConnection::send_write(int id, std::string_view data,
                                                          std::function<bool()> waiting) {
  if (dead_) return gone("earlier");
  if (!d_.writer->send(FrameType::s_write, {{"id", id}}, data)) return gone("before the call");
  unsettled_.push_back({id, data.size(), std::move(waiting)});
  unsettled_bytes_ += data.size();
  return std::nullopt;
}

void KeeperConnection::settle(bool one) {
  while (!unsettled_.empty()) {
    const Unsettled u = std::move(unsettled_.front());
    unsettled_.pop_front();
    unsettled_bytes_ -= u.bytes;
    auto r = answer(0, u.waiting);
    std::optional<TransportError> error;
    if (!r) {
      error = r.error();
    } else if (r->type == FrameType::error) {
      error = error_from_json(r->head);
    }
    if (error) write_errors_.emplace(u.id, *error);  // the first one stays
    if (one) return;
  }
}

std::optional<TransportError> KeeperConnection::write_error(int id) {
  auto it = write_errors_.find(id);
  if (it == write_errors_.end()) return std::nullopt;
  TransportError error = it->second;
  write_errors_.erase(it);
  return error;
}

Result<Frame, TransportError> KeeperConnection::call(FrameType type, const nlohmann::json& head,
                                                     std::string_view data, int extra_wait_ms,
                                                     const std::function<bool()>& waiting) {
  settle();  // the answers of earlier writes come first
  if (dead_) return unexpected(gone("earlier"));
  if (!d_.writer->send(type, head, data)) return unexpected(gone("before the call"));
  return answer(extra_wait_ms, waiting);
}

Result<Frame, TransportError> KeeperConnection::answer(int extra_wait_ms, const std::function<bool()>& waiting) {
  if (dead_) return unexpected(gone("earlier"));
  auto heard = SteadyClock::now();
  auto asked = heard;
  bool cancelled = false;
  Frame f;
  while (true) {
    const ReadStatus status = d_.reader->next(f, 200);
    const auto now = SteadyClock::now();
    if (status == ReadStatus::ok && f.type != FrameType::ping) return f;
    if (status == ReadStatus::ok) {
      heard = now;
    } else if (status != ReadStatus::timeout) {
      return unexpected(gone("mid-call"));
    }
    if (waiting && !cancelled && now - asked >= std::chrono::seconds(1)) {
      asked = now;
      if (!waiting()) {
        cancelled = true;
        tell(FrameType::cancel, nlohmann::json::object());
      }
    }
    if (now - heard > std::chrono::milliseconds(kSilenceMs + extra_wait_ms)) {
      dead_ = true;
      return unexpected(TransportError{
          ErrorKind::timeout, fmt::format("the connection keeper (pid {}) stopped answering for {} s", d_.pid,
                                          (kSilenceMs + extra_wait_ms) / 1000)});
    }
  }
}

Result<CommandExit, TransportError> KeeperConnection::run(const RemoteCommand& command, OutputSink& sink,
                                                          const CancelToken& cancel) {
  settle();
  if (dead_) return unexpected(gone("earlier"));
  nlohmann::json head = {{"command_line", command.command_line}, {"timeout_ms", command.timeout_ms}};
  if (!d_.writer->send(FrameType::run, head, command.stdin_data)) return unexpected(gone("before the command"));
  auto heard = SteadyClock::now();
  bool cancel_sent = false;
  Frame f;
  while (true) {
    const ReadStatus status = d_.reader->next(f, 100);
    const auto now = SteadyClock::now();
    if (status == ReadStatus::ok) {
      heard = now;
      switch (f.type) {
        case FrameType::out:
          sink.write(Stream::out, f.data);
          continue;
        case FrameType::err:
          sink.write(Stream::err, f.data);
          continue;
        case FrameType::exit: {
          CommandExit exit{f.head.value("code", 255), std::nullopt};
          if (f.head.contains("signal")) exit.signal = f.head["signal"].get<std::string>();
          return exit;
        }
        case FrameType::error:
          return unexpected(error_from_json(f.head));
        default:
          continue;  // ping
      }
    }
    if (status != ReadStatus::timeout) return unexpected(gone("mid-command"));
    if (cancel.cancelled() && !cancel_sent) {
      cancel_sent = true;
      tell(FrameType::cancel, nlohmann::json::object());
    }
    if (now - heard > std::chrono::milliseconds(kSilenceMs)) {
      dead_ = true;
      return unexpected(TransportError{
          ErrorKind::timeout,
          fmt::format("the connection keeper (pid {}) stopped answering mid-command for {} s", d_.pid,
                      kSilenceMs / 1000)});
    }
  }
}

Result<int, TransportError> KeeperConnection::open_id(FrameType type, const nlohmann::json& head,
                                                      const CancelToken& cancel) {
  auto r = call(type, head, {}, 0, [&cancel] { return !cancel.cancelled(); });
  if (!r) return unexpected(r.error());
  if (r->type == FrameType::error) return unexpected(error_from_json(r->head));
  if (r->type != FrameType::opened) return unexpected(TransportError{ErrorKind::channel, "unexpected keeper answer"});
  return r->head.value("id", 0);
}

Result<std::unique_ptr<ByteStream>, TransportError> KeeperConnection::open_stream(const std::string& host, int port,
                                                                                  const CancelToken& cancel) {
  auto id = open_id(FrameType::open_stream, {{"host", host}, {"port", port}}, cancel);
  if (!id) return unexpected(id.error());
  return std::unique_ptr<ByteStream>(new KeptStream(*this, *id));
}

Result<std::unique_ptr<ExecStream>, TransportError> KeeperConnection::open_exec(const std::string& command_line,
                                                                                const CancelToken& cancel) {
  auto id = open_id(FrameType::open_exec, {{"command_line", command_line}}, cancel);
  if (!id) return unexpected(id.error());
  return std::unique_ptr<ExecStream>(new KeptStream(*this, *id));
}

}  // namespace tpurun::keeper

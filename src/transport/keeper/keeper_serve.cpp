// One client connection of the keeper: the hello, then one request (status,
// stop, or a lease of a session to one worker), and on a lease the client's
// calls of the Connection interface, each carried out on the kept session:
// run() with its output streamed back as it comes, open_exec()/open_stream()
// and the calls on the streams they make.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <deque>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "tpurun/util/version.hpp"
#include "transport/keeper/frames.hpp"
#include "transport/keeper/keeper_server.hpp"
#include "transport/keeper/keeper_settings.hpp"

namespace tpurun::keeper {
namespace {

nlohmann::json error_json(const TransportError& e) {
  return {{"kind", static_cast<int>(e.kind)}, {"message", e.message}};
}

// A session whose call failed this way is not lent again.
bool breaks_session(const TransportError& e) {
  return e.kind == ErrorKind::channel || e.kind == ErrorKind::timeout || e.kind == ErrorKind::connect;
}

class FrameSink : public OutputSink {
 public:
  FrameSink(FrameWriter& writer, std::atomic<bool>& gone) : writer_(writer), gone_(gone) {}
  void write(Stream stream, std::string_view data) override {
    if (!writer_.send(stream == Stream::out ? FrameType::out : FrameType::err, nlohmann::json::object(), data)) {
      gone_ = true;
    }
  }

 private:
  FrameWriter& writer_;
  std::atomic<bool>& gone_;
};

// While a run goes on: pings the client every second (so that it can tell a
// working keeper from a wedged one) and turns its cancel, or its going
// away, into the run's CancelToken.
class RunWatch {
 public:
  RunWatch(int fd, FrameReader& reader, FrameWriter& writer, std::atomic<bool>& cancelled)
      : wake_(::eventfd(0, EFD_CLOEXEC)) {
    thread_ = std::thread([this, fd, &reader, &writer, &cancelled] {
      bool listening = true;
      while (true) {
        pollfd p[2] = {{wake_.get(), POLLIN, 0}, {listening ? fd : -1, POLLIN, 0}};
        const int ready = ::poll(p, 2, 1000);
        if (ready > 0 && (p[0].revents & POLLIN) != 0) return;
        if (ready == 0) {
          if (!writer.send(FrameType::ping)) cancelled = true;
          continue;
        }
        if (ready > 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
          Frame frame;
          const ReadStatus status = reader.next(frame, 0);
          if (status == ReadStatus::ok && frame.type == FrameType::cancel) cancelled = true;
          if (status == ReadStatus::eof || status == ReadStatus::error) {
            cancelled = true;
            listening = false;
          }
        }
      }
    });
  }
  ~RunWatch() {
    const std::uint64_t one = 1;
    (void)!::write(wake_.get(), &one, sizeof one);
    thread_.join();
  }

 private:
  UniqueFd wake_;
  std::thread thread_;
};

class LeaseServer {
 public:
  LeaseServer(int fd, FrameReader& reader, FrameWriter& writer, Lease& lease, std::chrono::seconds open_timeout)
      : fd_(fd), reader_(reader), writer_(writer), lease_(lease), open_timeout_(open_timeout) {}

  // Serves calls until the client closes; whether the session is still good.
  bool serve() {
    Frame frame;
    while (next(frame)) {
      if (!handle(frame)) return false;
    }
    streams_.clear();
    return healthy_;
  }

 private:
  // What `agent status` reports as a session's peak: the channels one
  // command keeps open on it at once (sshd refuses more than MaxSessions).
  void count_channel(size_t open) {
    lease_.info.peak_channels = std::max(lease_.info.peak_channels, static_cast<int>(open));
  }

  bool handle(const Frame& f) {
    switch (f.type) {
      case FrameType::run:
        return run(f);
      case FrameType::open_exec:
      case FrameType::open_stream:
        return open(f);
      case FrameType::s_free:
        streams_.erase(f.head.value("id", -1));
        return true;
      default:
        return stream_call(f);
    }
  }

  bool answer_error(const TransportError& e) {
    if (breaks_session(e)) healthy_ = false;
    return writer_.send(FrameType::error, error_json(e));
  }

  bool run(const Frame& f) {
    RemoteCommand command;
    command.command_line = f.head.value("command_line", "");
    command.timeout_ms = f.head.value("timeout_ms", 0LL);
    command.stdin_data = f.data;
    std::atomic<bool> cancelled{false};
    FrameSink sink(writer_, cancelled);
    count_channel(streams_.size() + 1);
    Result<CommandExit, TransportError> result = [&] {
      RunWatch watch(fd_, reader_, writer_, cancelled);
      return lease_.connection->run(command, sink, CancelToken(&cancelled));
    }();
    if (!result) return answer_error(result.error());
    nlohmann::json head = {{"code", result->code}};
    if (result->signal) head["signal"] = *result->signal;
    return writer_.send(FrameType::exit, head);
  }

  CancelToken open_deadline() const { return CancelToken().until(Clock::now() + open_timeout_); }

  bool open(const Frame& f) {
    Result<std::unique_ptr<ByteStream>, TransportError> opened = unexpected(TransportError{});
    ExecStream* exec = nullptr;
    if (f.type == FrameType::open_exec) {
      auto r = lease_.connection->open_exec(f.head.value("command_line", ""), open_deadline());
      if (r) {
        exec = r->get();
        opened = std::unique_ptr<ByteStream>(std::move(*r));
      } else {
        opened = unexpected(r.error());
      }
    } else {
      opened = lease_.connection->open_stream(f.head.value("host", "localhost"), f.head.value("port", 0),
                                              open_deadline());
    }
    if (!opened) return answer_error(opened.error());
    const int id = next_id_++;
    streams_[id] = {std::move(*opened), exec};
    count_channel(streams_.size());
    return writer_.send(FrameType::opened, {{"id", id}});
  }

  // The next call: one that came while a write waited, else from the socket.
  bool next(Frame& frame) {
    if (!queued_.empty()) {
      frame = std::move(queued_.front());
      queued_.pop_front();
      return true;
    }
    return reader_.next(frame, -1) == ReadStatus::ok;
  }

  // The hook a write calls while the worker takes no more: the client hears
  // that the keeper still works, and its cancel ends the write. The client
  // does not wait for a write's answer before it sends the next call (its
  // writes are pipelined): those are kept, in order, for after this one.
  bool still_wanted() {
    if (!writer_.send(FrameType::ping)) return false;
    while (true) {
      Frame frame;
      const ReadStatus status = reader_.next(frame, 0);
      if (status == ReadStatus::eof || status == ReadStatus::error) return false;
      if (status != ReadStatus::ok) return true;
      if (frame.type == FrameType::cancel) return false;
      queued_.push_back(std::move(frame));
    }
  }

  bool stream_call(const Frame& f) {
    auto it = streams_.find(f.head.value("id", -1));
    if (it == streams_.end()) {
      return answer_error(TransportError{ErrorKind::local, "the keeper has no such stream"});
    }
    ByteStream& stream = *it->second.stream;
    ExecStream* exec = it->second.exec;
    switch (f.type) {
      case FrameType::s_write: {
        stream.while_waiting([this] { return still_wanted(); });
        if (auto error = stream.write(f.data)) return answer_error(*error);
        return writer_.send(FrameType::done);
      }
      case FrameType::s_read: {
        auto r = stream.read(f.head.value("wait_ms", 0));
        if (!r) return answer_error(r.error());
        return writer_.send(FrameType::s_data, {{"eof", r->eof}}, r->data);
      }
      case FrameType::s_close_input:
        if (exec != nullptr) exec->close_input();
        return writer_.send(FrameType::done);
      case FrameType::s_err:
        return writer_.send(FrameType::done, {{"text", exec != nullptr ? exec->err() : ""}});
      case FrameType::s_exit: {
        const std::optional<int> code = exec != nullptr ? exec->exit_code() : std::nullopt;
        return writer_.send(FrameType::done, {{"code", code ? nlohmann::json(*code) : nlohmann::json(nullptr)}});
      }
      default:
        return answer_error(TransportError{ErrorKind::local, "the keeper got a call it does not know"});
    }
  }

  struct Open {
    std::unique_ptr<ByteStream> stream;
    ExecStream* exec = nullptr;
  };
  int fd_;
  FrameReader& reader_;
  FrameWriter& writer_;
  Lease& lease_;
  std::chrono::seconds open_timeout_;
  std::map<int, Open> streams_;
  std::deque<Frame> queued_;
  int next_id_ = 1;
  bool healthy_ = true;
};

nlohmann::json status_json(const Server& server) {
  nlohmann::json sessions = nlohmann::json::array();
  for (const KeptSessionInfo& s : server.pool.list()) {
    sessions.push_back({{"host", s.host}, {"port", s.port}, {"user", s.user}, {"alias", s.alias},
                        {"age_s", s.age_s}, {"idle_s", s.idle_s}, {"in_use", s.in_use},
                        {"peak_channels", s.peak_channels}});
  }
  return {{"pid", ::getpid()}, {"version", version_line()},
          {"idle_limit_s", std::chrono::duration<double>(server.idle).count()}, {"sessions", sessions}};
}

void serve_lease(int fd, FrameReader& reader, FrameWriter& writer, const Frame& open, Server& server) {
  const nlohmann::json settings = open.head.value("settings", nlohmann::json::object());
  const Worker worker = worker_from_json(open.head.value("worker", nlohmann::json::object()));
  const std::chrono::milliseconds idle(open.head.value("idle_ms", 0LL));
  const auto timeout = std::chrono::seconds(settings.value("connect_timeout_s", 10));
  auto lease = server.pool.lease(settings, worker, idle, CancelToken().until(Clock::now() + timeout));
  if (!lease) {
    writer.send(FrameType::error, error_json(lease.error()));
    return;
  }
  if (!writer.send(FrameType::ready, {{"reused", lease->reused}})) {
    server.pool.give_back(std::move(*lease), true);
    return;
  }
  const bool healthy = LeaseServer(fd, reader, writer, *lease, timeout).serve();
  server.pool.give_back(std::move(*lease), healthy);
}

}  // namespace

void serve_client(UniqueFd fd, Server& server) {
  FrameWriter writer(fd.get());
  FrameReader reader(fd.get());
  if (writer.send(FrameType::hello, {{"version", version_line()}, {"pid", ::getpid()}})) {
    Frame first;
    if (reader.next(first, 5000) == ReadStatus::ok) {
      switch (first.type) {
        case FrameType::status:
          writer.send(FrameType::done, status_json(server));
          break;
        case FrameType::stop:
          writer.send(FrameType::done, {{"closed", server.pool.list().size()}});
          server.stopping = true;
          break;
        case FrameType::open:  // only leases count as use: agent status does not keep a keeper alive
          server.touch();
          serve_lease(fd.get(), reader, writer, first, server);
          server.touch();
          break;
        default:
          break;
      }
    }
  }
  --server.active;
}

}  // namespace tpurun::keeper

// KeptConnections: a connection per worker, kept open between uses.
#include "tpurun/transport/kept_connections.hpp"

namespace tpurun {
namespace {

// Passes output on, noting whether any came: a command that printed something
// has run, and is not run again.
class WatchedSink : public OutputSink {
 public:
  explicit WatchedSink(OutputSink& inner) : inner_(inner) {}
  void write(Stream stream, std::string_view data) override {
    wrote = wrote || !data.empty();
    inner_.write(stream, data);
  }
  bool wrote = false;

 private:
  OutputSink& inner_;
};

class KeptConnection : public Connection {
 public:
  KeptConnection(std::shared_ptr<KeptConnections::Slot> slot, Transport& inner, Worker worker, bool fresh)
      : slot_(std::move(slot)), inner_(inner), worker_(std::move(worker)), fresh_(fresh) {}

  Result<CommandExit, TransportError> run(const RemoteCommand& command, OutputSink& sink,
                                          const CancelToken& cancel) override {
    WatchedSink watched(sink);
    auto exit = slot_->connection->run(command, watched, cancel);
    if (exit) return exit;
    slot_->connection.reset();  // broken or in an unknown state: the next use reconnects
    if (fresh_ || watched.wrote || exit.error().kind != ErrorKind::channel || cancel.cancelled()) return exit;
    fresh_ = true;
    auto again = inner_.connect(worker_, cancel);
    if (!again) return unexpected(again.error());
    slot_->connection = std::move(*again);
    auto retried = slot_->connection->run(command, sink, cancel);
    if (!retried) slot_->connection.reset();
    return retried;
  }

  // Opening a stream runs nothing, so a stale session is simply replaced.
  Result<std::unique_ptr<ByteStream>, TransportError> open_stream(const std::string& host, int port,
                                                                  const CancelToken& cancel) override {
    auto stream = slot_->connection->open_stream(host, port, cancel);
    if (stream || stream.error().kind != ErrorKind::channel || fresh_ || cancel.cancelled()) return stream;
    slot_->connection.reset();
    fresh_ = true;
    auto again = inner_.connect(worker_, cancel);
    if (!again) return unexpected(again.error());
    slot_->connection = std::move(*again);
    return slot_->connection->open_stream(host, port, cancel);
  }

 private:
  std::shared_ptr<KeptConnections::Slot> slot_;
  Transport& inner_;
  Worker worker_;
  bool fresh_;  // made for this use: a failure on it is the worker's answer, not a stale session's
};

}  // namespace

Result<std::unique_ptr<Connection>, TransportError> KeptConnections::connect(const Worker& worker,
                                                                             const CancelToken& cancel) {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard lock(mu_);
    // By index too: a host listed twice gets two connections, never one shared by two threads.
    auto& kept = slots_[std::to_string(worker.index) + "@" + worker.host + ":" + std::to_string(worker.port)];
    if (!kept) kept = std::make_shared<Slot>();
    slot = kept;
  }
  const bool fresh = !slot->connection;
  if (fresh) {
    auto made = inner_->connect(worker, cancel);
    if (!made) return unexpected(made.error());
    slot->connection = std::move(*made);
  }
  return std::unique_ptr<Connection>(new KeptConnection(slot, *inner_, worker, fresh));
}

}  // namespace tpurun

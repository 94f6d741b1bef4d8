#pragma once
// A Transport that runs nothing: each worker's behaviour is scripted, and every
// command it was asked to run is recorded for the test to assert on.
#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <string>
#include <vector>

#include "tpurun/transport/transport.hpp"

namespace tpurun::testing {

struct FakeBehaviour {
  std::optional<TransportError> connect_error;  // fail at connect
  std::optional<TransportError> run_error;      // fail mid-command
  std::string out;                              // written to stdout
  std::string err;                              // written to stderr
  int exit_code = 0;
  std::optional<std::string> signal;
  // open_stream(host, port): unset, nothing listens (`refused`), as on a
  // worker where no workload serves metrics.
  std::function<Result<std::unique_ptr<ByteStream>, TransportError>(const std::string&, int)> stream;
  // open_exec(command_line): unset, this fake cannot hold a command open.
  std::function<Result<std::unique_ptr<ExecStream>, TransportError>(const std::string&)> exec;
};

class FakeTransport : public Transport {
 public:
  std::map<int, FakeBehaviour> behaviour;  // by worker index; default: exit 0, no output

  struct Ran {
    int worker;
    RemoteCommand command;
  };
  struct Opened {
    int worker;
    std::string host;
    int port;
  };
  std::vector<Opened> streams_opened() const {
    std::lock_guard lock(mutex_);
    return opened_;
  }
  std::vector<Ran> commands_ran() const {
    std::lock_guard lock(mutex_);
    return ran_;
  }
  int connects() const {
    std::lock_guard lock(mutex_);
    return connects_;
  }

  Result<std::unique_ptr<Connection>, TransportError> connect(const Worker& worker,
                                                              const CancelToken&) override {
    std::lock_guard lock(mutex_);
    ++connects_;
    FakeBehaviour b = behaviour.count(worker.index) ? behaviour.at(worker.index) : FakeBehaviour{};
    if (b.connect_error) return unexpected(*b.connect_error);
    return std::unique_ptr<Connection>(new FakeConnection(*this, worker.index, b));
  }

 private:
  class FakeConnection : public Connection {
   public:
    FakeConnection(FakeTransport& t, int index, FakeBehaviour b) : t_(t), index_(index), b_(std::move(b)) {}
    Result<CommandExit, TransportError> run(const RemoteCommand& command, OutputSink& sink,
                                            const CancelToken&) override {
      {
        std::lock_guard lock(t_.mutex_);
        t_.ran_.push_back({index_, command});
      }
      if (!b_.out.empty()) sink.write(Stream::out, b_.out);
      if (!b_.err.empty()) sink.write(Stream::err, b_.err);
      if (b_.run_error) return unexpected(*b_.run_error);
      return CommandExit{b_.exit_code, b_.signal};
    }
    Result<std::unique_ptr<ByteStream>, TransportError> open_stream(const std::string& host, int port,
                                                                    const CancelToken&) override {
      {
        std::lock_guard lock(t_.mutex_);
        t_.opened_.push_back({index_, host, port});
      }
      if (b_.stream) return b_.stream(host, port);
      return unexpected(TransportError{ErrorKind::refused, "nothing listens on the worker's " + host + ":" +
                                                               std::to_string(port) + " (connection refused)"});
    }

    Result<std::unique_ptr<ExecStream>, TransportError> open_exec(const std::string& command_line,
                                                                  const CancelToken&) override {
      {
        std::lock_guard lock(t_.mutex_);
        t_.ran_.push_back({index_, RemoteCommand{command_line, "", 0}});
      }
      if (b_.exec) return b_.exec(command_line);
      return unexpected(TransportError{ErrorKind::channel, "this fake cannot hold a command open"});
    }

   private:
    FakeTransport& t_;
    int index_;
    FakeBehaviour b_;
  };

  mutable std::mutex mutex_;
  std::vector<Ran> ran_;
  std::vector<Opened> opened_;
  int connects_ = 0;
};

inline std::vector<Worker> make_workers(int n) {
  std::vector<Worker> workers;
  for (int i = 0; i < n; ++i) workers.push_back({i, "10.0.0." + std::to_string(i + 1), 22});
  return workers;
}

}  // namespace tpurun::testing

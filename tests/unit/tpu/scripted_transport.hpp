#pragma once
// A Transport whose every command is answered by a test function, for
// multi-step sequences (scan, kill, scan, clean) where each step's answer
// depends on the command. Records what ran, per worker.
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tpurun/transport/transport.hpp"
#include "tpurun/worker/programs.hpp"

namespace tpurun::testing {

struct ScriptedReply {
  std::string out;
  std::string err;
  int exit_code = 0;
};

class ScriptedTransport : public Transport {
 public:
  using Responder = std::function<ScriptedReply(int worker, const RemoteCommand& command)>;
  explicit ScriptedTransport(Responder responder) : responder_(std::move(responder)) {}

  std::set<int> unreachable;

  struct Ran {
    int worker;
    RemoteCommand command;
  };
  std::vector<Ran> commands_ran() const {
    std::lock_guard lock(mutex_);
    return ran_;
  }

  Result<std::unique_ptr<Connection>, TransportError> connect(const Worker& worker,
                                                              const CancelToken&) override {
    if (unreachable.count(worker.index)) {
      return unexpected(TransportError{ErrorKind::connect, "connection refused"});
    }
    return std::unique_ptr<Connection>(new ScriptedConnection(*this, worker.index));
  }

 private:
  class ScriptedConnection : public Connection {
   public:
    ScriptedConnection(ScriptedTransport& t, int index) : t_(t), index_(index) {}
    Result<CommandExit, TransportError> run(const RemoteCommand& command, OutputSink& sink,
                                            const CancelToken&) override {
      {
        std::lock_guard lock(t_.mutex_);
        t_.ran_.push_back({index_, command});
      }
      ScriptedReply reply = t_.responder_(index_, command);
      if (!reply.out.empty()) sink.write(Stream::out, reply.out);
      if (!reply.err.empty()) sink.write(Stream::err, reply.err);
      return CommandExit{reply.exit_code, std::nullopt};
    }

   private:
    ScriptedTransport& t_;
    int index_;
  };

  Responder responder_;
  mutable std::mutex mutex_;
  std::vector<Ran> ran_;
};

// Which of tpurun's remote scripts a command carries: "TPURUN-SCAN", ...
inline std::string script_kind(const RemoteCommand& command) {
  if (command.stdin_data == worker::kScanSh) return "TPURUN-SCAN";
  if (command.stdin_data == worker::kKillSh) return "TPURUN-KILL";
  if (command.stdin_data == worker::kCleanSh) return "TPURUN-CLEAN";
  return "?";
}

}  // namespace tpurun::testing

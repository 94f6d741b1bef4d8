#pragma once
// The seam in front of SSH: connect, run (exec + stream + signal on cancel),
// close. libssh implements it for real pods, a local runner for a single-host
// "pod", and unit tests fake it.
#include <memory>
#include <string>
#include <string_view>

#include "tpurun/cancel.hpp"
#include "tpurun/outcome.hpp"
#include "tpurun/result.hpp"
#include "tpurun/worker.hpp"

namespace tpurun {

enum class Stream { out, err };

// Receives a command's output as it arrives, in arbitrary chunks.
class OutputSink {
 public:
  virtual ~OutputSink() = default;
  virtual void write(Stream stream, std::string_view data) = 0;
};

struct RemoteCommand {
  std::string command_line;  // run by the remote user's shell, like ssh's command
  std::string stdin_data;    // sent, then EOF (the command always sees EOF)
  // When > 0: past this many milliseconds the command is sent SIGTERM, then
  // SIGKILL, and the result is a `timeout` error (exec --timeout, probes).
  long long timeout_ms = 0;
};

// One open session to a worker. Used by one thread at a time.
class Connection {
 public:
  virtual ~Connection() = default;
  // Runs the command to completion, streaming output into `sink`. When `cancel`
  // fires, the command is sent SIGINT, then SIGTERM, and the channel closed;
  // the result is then an `interrupted` error. A worker that stops answering
  // mid-command (frozen, or its link gone without a reset) is detected by SSH
  // keepalives and reported as a `timeout` error within about 30s.
  virtual Result<CommandExit, TransportError> run(const RemoteCommand& command, OutputSink& sink,
                                                  const CancelToken& cancel) = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual Result<std::unique_ptr<Connection>, TransportError> connect(const Worker& worker,
                                                                      const CancelToken& cancel) = 0;
};

// Collects output into strings (for --json, --gather and scans).
class CaptureSink : public OutputSink {
 public:
  void write(Stream stream, std::string_view data) override {
    (stream == Stream::out ? out : err).append(data);
  }
  std::string out;
  std::string err;
};

}  // namespace tpurun

#pragma once
// The seam in front of SSH: connect, run (exec + stream + signal on cancel),
// open a byte stream to a port on the worker, close. libssh implements it for
// real pods, a local runner for a single-host "pod", and unit tests fake it.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tpurun/pod/worker.hpp"
#include "tpurun/transport/outcome.hpp"
#include "tpurun/util/cancel.hpp"
#include "tpurun/util/result.hpp"

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

// What one read from a ByteStream brought: data, the end of the stream, or
// (neither) nothing within the wait.
struct StreamRead {
  std::string data;
  bool eof = false;
};

// A TCP connection as the worker makes it, carried inside the worker's
// session (SSH direct-tcpip, what `ssh -W` uses): nothing is installed on the
// worker and no port is opened to the network. Closed when destroyed. Used by
// the thread that uses its Connection, and only while that Connection lives.
class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Sends all of `data`; an error means the stream is broken.
  virtual std::optional<TransportError> write(std::string_view data) = 0;
  // Waits up to `wait_ms` for data.
  virtual Result<StreamRead, TransportError> read(int wait_ms) = 0;
  // Called about every second while write() waits for the worker to take
  // more (a stopped or slow reader); false ends the write with an
  // `interrupted` error. The caller can do what must not wait for the
  // write: keep a reservation alive, notice Ctrl-C. Streams whose writes
  // never wait long keep the default, which ignores it.
  virtual void while_waiting(std::function<bool()> hook) { (void)hook; }
};

// A command on the worker that stays in conversation with us: write() feeds
// its stdin, read() returns its stdout as it comes, and its stderr is kept
// for err(). stage's launch is one: the worker answers that it reserved its
// TPU, then waits for the launch script, or for EOF (given up: nothing
// starts). Destroying it closes the channel; the command sees EOF and hangup.
class ExecStream : public ByteStream {
 public:
  // EOF on the command's stdin; nothing more can be written.
  virtual void close_input() = 0;
  // What the command wrote to stderr so far.
  virtual std::string err() const = 0;
  // Once read() has seen the end of stdout: the command's exit code (128+N
  // for a signal), or nullopt when it is not known.
  virtual std::optional<int> exit_code() = 0;
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
  // Connects, from the worker, to host:port as the worker resolves it
  // ("localhost" is the worker's own loopback). Nothing listening there is a
  // `refused` error: for a service that only runs with a workload (libtpu's
  // metrics), that is an answer, not a fault. Transports that cannot carry
  // streams keep this default, which says so.
  virtual Result<std::unique_ptr<ByteStream>, TransportError> open_stream(const std::string& host, int port,
                                                                          const CancelToken& cancel);
  // Starts `command_line` under the worker's shell (as run() does) and keeps
  // its stdin open (ExecStream). Transports that cannot keep this default.
  virtual Result<std::unique_ptr<ExecStream>, TransportError> open_exec(const std::string& command_line,
                                                                        const CancelToken& cancel);
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual Result<std::unique_ptr<Connection>, TransportError> connect(const Worker& worker,
                                                                      const CancelToken& cancel) = 0;
  // Where a bulk copy (a push of many megabytes) connects when this transport
  // relays its sessions (the connection keeper): the same connections, host
  // key checks and options without the relay's extra copy of every byte.
  // Null when this transport's own connections are already direct.
  virtual Transport* bulk() { return nullptr; }
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

#include "transport/local_transport.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "tpurun/util/duration.hpp"
#include "tpurun/util/subprocess.hpp"
#include "transport/fd_stream.hpp"
#include "transport/local_exec.hpp"

namespace tpurun {
namespace {

class LocalConnection : public Connection {
 public:
  Result<CommandExit, TransportError> run(const RemoteCommand& command, OutputSink& sink,
                                          const CancelToken& cancel) override {
    // Like sshd: the command line goes to a shell. A timeout is a second
    // cancel source, watched by a small thread.
    std::atomic<bool> stop{false};
    std::atomic<bool> timed_out{false};
    std::mutex m;
    std::condition_variable done_cv;
    bool done = false;
    std::thread watchdog;
    {
      watchdog = std::thread([&] {
        std::unique_lock lock(m);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(command.timeout_ms);
        while (!done) {
          if (cancel.cancelled()) stop = true;
          if (command.timeout_ms > 0 && std::chrono::steady_clock::now() >= deadline) {
            timed_out = true;
            stop = true;
          }
          done_cv.wait_for(lock, std::chrono::milliseconds(50));
        }
      });
    }
    auto result = run_subprocess({"/bin/sh", "-c", command.command_line}, command.stdin_data,
                                 std::nullopt, sink, CancelToken(&stop));
    {
      std::lock_guard lock(m);
      done = true;
    }
    done_cv.notify_all();
    watchdog.join();
    if (!result) return unexpected(TransportError{ErrorKind::local, result.error()});
    if (timed_out) {
      return unexpected(TransportError{
          ErrorKind::deadline, fmt::format("timed out after {}; the command was stopped",
                                          format_duration_ms(command.timeout_ms))});
    }
    if (cancel.cancelled()) {
      return unexpected(TransportError{ErrorKind::interrupted, interrupted_by()});
    }
    return *result;
  }

  // A single-host pod is this machine: its localhost is ours.
  Result<std::unique_ptr<ByteStream>, TransportError> open_stream(const std::string& host, int port,
                                                                  const CancelToken& cancel) override {
    return connect_tcp_stream(host, port, cancel);
  }

  Result<std::unique_ptr<ExecStream>, TransportError> open_exec(const std::string& command_line,
                                                                const CancelToken& cancel) override {
    if (cancel.cancelled()) return unexpected(TransportError{ErrorKind::interrupted, interrupted_by()});
    return open_local_exec(command_line);
  }
};

}  // namespace

Result<std::unique_ptr<Connection>, TransportError> LocalTransport::connect(const Worker&,
                                                                           const CancelToken&) {
  return std::unique_ptr<Connection>(new LocalConnection());
}

}  // namespace tpurun

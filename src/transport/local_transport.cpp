#include "tpurun/local_transport.hpp"

#include "tpurun/subprocess.hpp"

namespace tpurun {
namespace {

class LocalConnection : public Connection {
 public:
  Result<CommandExit, TransportError> run(const RemoteCommand& command, OutputSink& sink,
                                          const CancelToken& cancel) override {
    // Like sshd: the command line goes to a shell.
    auto result = run_subprocess({"/bin/sh", "-c", command.command_line}, command.stdin_data,
                                 std::nullopt, sink, cancel);
    if (!result) return unexpected(TransportError{ErrorKind::local, result.error()});
    if (cancel.cancelled()) {
      return unexpected(TransportError{ErrorKind::interrupted, "interrupted by Ctrl-C"});
    }
    return *result;
  }
};

}  // namespace

Result<std::unique_ptr<Connection>, TransportError> LocalTransport::connect(const Worker&,
                                                                           const CancelToken&) {
  return std::unique_ptr<Connection>(new LocalConnection());
}

}  // namespace tpurun

#pragma once
#include <libssh/libssh.h>

#include "tpurun/transport/transport.hpp"

namespace tpurun {

// An authenticated libssh session; each run() opens one exec channel, each
// open_stream() one direct-tcpip channel (ssh_stream.cpp), each open_exec()
// one exec channel kept open (ssh_exec.cpp).
class SshConnection : public Connection {
 public:
  SshConnection(ssh_session session, Worker worker) : session_(session), worker_(std::move(worker)) {}
  ~SshConnection() override;
  SshConnection(const SshConnection&) = delete;
  SshConnection& operator=(const SshConnection&) = delete;

  Result<CommandExit, TransportError> run(const RemoteCommand& command, OutputSink& sink,
                                          const CancelToken& cancel) override;
  Result<std::unique_ptr<ByteStream>, TransportError> open_stream(const std::string& host, int port,
                                                                  const CancelToken& cancel) override;
  Result<std::unique_ptr<ExecStream>, TransportError> open_exec(const std::string& command_line,
                                                                const CancelToken& cancel) override;

  // For the keeper (transport/keeper): the session, to check its host key
  // again; and whether sshd answers a keepalive within `wait_ms` (a kept
  // session may have gone quiet: the worker frozen, cut off or gone). The
  // session's timeout is `restore_s` seconds again afterwards.
  ssh_session session() const { return session_; }
  bool answers_within(long wait_ms, long restore_s);
  const Worker& worker() const { return worker_; }

 private:
  ssh_session session_;
  Worker worker_;
};

}  // namespace tpurun

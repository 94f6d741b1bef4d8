#pragma once
// Transport over libssh, in-process: no ssh client is forked per worker.
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "tpurun/pod/pod.hpp"
#include "tpurun/transport/transport.hpp"

struct ssh_session_struct;  // libssh's session and key, declared here to keep libssh out of this header
struct ssh_key_struct;

namespace tpurun {

struct SshTransportOptions {
  SshSettings ssh;
  std::string key_exchange;  // e.g. "curve25519-sha256"; empty: libssh's default list
  int log_verbosity = 0;     // libssh's SSH_LOG_* level
};

class SshTransport : public Transport {
 public:
  explicit SshTransport(SshTransportOptions options);
  ~SshTransport() override;
  SshTransport(const SshTransport&) = delete;
  SshTransport& operator=(const SshTransport&) = delete;
  Result<std::unique_ptr<Connection>, TransportError> connect(const Worker& worker,
                                                              const CancelToken& cancel) override;
  // The host key check of connect(), again on a session made earlier (the
  // keeper's, before it hands a kept session out): a known_hosts line that
  // changed since then counts as it would for a new connection.
  std::optional<TransportError> recheck_host_key(::ssh_session_struct* session, const Worker& worker) {
    return verify_host_key(session, worker);
  }
  // What that check reads, as a string that changes when any of it does:
  // each known_hosts file that may be consulted (the pod's, the defaults,
  // the alias file, the session's own when given) and ~/.ssh/config, by
  // device, inode, size, mtime and ctime. The keeper rechecks a kept session
  // only when this differs from what it had at the session's last check: a
  // 344-line known_hosts read for every lease was 40% of the keeper's CPU.
  std::string host_key_inputs(::ssh_session_struct* session) const;

 private:
  std::optional<TransportError> authenticate(::ssh_session_struct* session);
  ::ssh_key_struct* identity_key();  // the identity file's key, loaded once; nullptr if it cannot be
  std::optional<TransportError> verify_host_key(::ssh_session_struct* session, const Worker& worker);
  std::optional<TransportError> record_host_key(::ssh_session_struct* session);
  std::optional<TransportError> record_alias_key(::ssh_session_struct* session, const std::string& alias);

  SshTransportOptions options_;
  std::mutex known_hosts_write_;  // accept-new appends from many threads
  std::once_flag identity_loaded_;
  ::ssh_key_struct* identity_ = nullptr;
};

}  // namespace tpurun

#pragma once
// The keeper's sessions: kept per key (keeper_settings.hpp), each lent to one
// client connection at a time, so that no session carries more channels than
// one tpurun command opens on it (sshd's MaxSessions is 10). A session comes
// back after use and is dropped once unused for its idle time.
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tpurun/transport/keeper/keeper.hpp"
#include "transport/ssh_connection.hpp"
#include "transport/ssh_transport.hpp"

namespace tpurun::keeper {

using Clock = std::chrono::steady_clock;

// A kept session waits this long for sshd's answer to a keepalive before it
// is lent again; one that does not answer is dropped for a new connection
// (so a frozen worker costs this plus connect_timeout).
constexpr long kReuseProbeMs = 500;
// Sessions kept unused per key: two terminals' commands at once, and a bit.
constexpr size_t kMaxIdlePerKey = 4;

struct Lease {
  std::unique_ptr<SshConnection> connection;
  std::string key;
  KeptSessionInfo info;
  Clock::time_point made{};
  std::chrono::milliseconds idle{0};
  std::uint64_t id = 0;
  bool reused = false;
  std::string host_key_inputs;  // SshTransport::host_key_inputs at its last host key check
};

class SessionPool {
 public:
  // A session to `worker` under `settings`: a kept one that still answers
  // and whose host key known_hosts still accepts, else a new connection
  // (checked as tpurun checks every connection). Bounded by the connect
  // timeout and one reuse probe.
  Result<Lease, TransportError> lease(const nlohmann::json& settings, const Worker& worker,
                                      std::chrono::milliseconds idle, const CancelToken& cancel);
  // Takes the session back when it is still `healthy`; otherwise closes it.
  void give_back(Lease lease, bool healthy);
  // Closes the sessions unused for longer than their idle time.
  void reap();
  std::vector<KeptSessionInfo> list() const;
  bool empty() const;
  size_t close_all();

 private:
  struct Kept {
    std::unique_ptr<SshConnection> connection;
    KeptSessionInfo info;
    Clock::time_point made{};
    Clock::time_point used{};
    std::chrono::milliseconds idle{0};
    std::string host_key_inputs;
  };
  SshTransport& transport_for(const nlohmann::json& settings);
  std::optional<Lease> reuse(const std::string& key, SshTransport& transport, const Worker& worker, long timeout_s);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<SshTransport>> transports_;  // by settings
  std::map<std::string, std::deque<Kept>> kept_;                     // by session key, newest last
  std::map<std::uint64_t, std::pair<KeptSessionInfo, Clock::time_point>> lent_;
  std::uint64_t next_id_ = 1;
};

}  // namespace tpurun::keeper

#include "transport/keeper/keeper_pool.hpp"

#include <libssh/libssh.h>

#include "transport/keeper/keeper_settings.hpp"

namespace tpurun::keeper {
namespace {

double seconds_since(Clock::time_point t, Clock::time_point now) {
  return std::chrono::duration<double>(now - t).count();
}

}  // namespace

SshTransport& SessionPool::transport_for(const nlohmann::json& settings) {
  const std::string key = settings.dump();
  std::lock_guard lock(mu_);
  auto& slot = transports_[key];
  if (!slot) slot = std::make_unique<SshTransport>(settings_from_json(settings));
  return *slot;
}

std::optional<Lease> SessionPool::reuse(const std::string& key, SshTransport& transport, const Worker& worker,
                                        long timeout_s) {
  while (true) {
    Kept kept;
    {
      std::lock_guard lock(mu_);
      auto it = kept_.find(key);
      if (it == kept_.end() || it->second.empty()) return std::nullopt;
      kept = std::move(it->second.back());
      it->second.pop_back();
      if (it->second.empty()) kept_.erase(it);
    }
    // A kept session never hides a changed key: once known_hosts (or what
    // points to it) changed since its last check, it is read again, as a new
    // connection would read it; and the session must still answer.
    const std::string inputs = transport.host_key_inputs(kept.connection->session());
    if (inputs != kept.host_key_inputs && transport.recheck_host_key(kept.connection->session(), worker)) continue;
    if (!kept.connection->answers_within(kReuseProbeMs, timeout_s)) continue;
    Lease lease;
    lease.connection = std::move(kept.connection);
    lease.info = kept.info;
    lease.made = kept.made;
    lease.reused = true;
    lease.host_key_inputs = inputs;
    return lease;
  }
}

Result<Lease, TransportError> SessionPool::lease(const nlohmann::json& settings, const Worker& worker,
                                                 std::chrono::milliseconds idle, const CancelToken& cancel) {
  SshTransport& transport = transport_for(settings);
  const std::string key = session_key(settings, worker);
  const SshTransportOptions options = settings_from_json(settings);
  std::optional<Lease> lease = reuse(key, transport, worker, options.ssh.connect_timeout_s);
  if (!lease) {
    // Taken before the connection checks the key: a line that accept-new
    // adds, or anyone's change meanwhile, makes the first reuse check again.
    const std::string inputs = transport.host_key_inputs(nullptr);
    auto fresh = transport.connect(worker, cancel);
    if (!fresh) return unexpected(fresh.error());
    lease.emplace();
    lease->connection.reset(static_cast<SshConnection*>(fresh->release()));
    lease->made = Clock::now();
    lease->host_key_inputs = inputs;
    lease->info.host = worker.host;
    lease->info.port = worker.port;
    lease->info.alias = worker.host_key_alias;
    lease->info.user = options.ssh.user;
    if (lease->info.user.empty()) {
      char* user = nullptr;
      if (ssh_options_get(lease->connection->session(), SSH_OPTIONS_USER, &user) == SSH_OK && user != nullptr) {
        lease->info.user = user;
      }
      ssh_string_free_char(user);
    }
  }
  lease->key = key;
  lease->idle = idle;
  std::lock_guard lock(mu_);
  lease->id = next_id_++;
  lent_[lease->id] = {lease->info, lease->made};
  return std::move(*lease);
}

void SessionPool::give_back(Lease lease, bool healthy) {
  std::unique_ptr<SshConnection> closing;
  {
    std::lock_guard lock(mu_);
    lent_.erase(lease.id);
    if (!healthy || !ssh_is_connected(lease.connection->session())) {
      closing = std::move(lease.connection);
    } else {
      auto& list = kept_[lease.key];
      list.push_back(Kept{std::move(lease.connection), lease.info, lease.made, Clock::now(), lease.idle,
                          std::move(lease.host_key_inputs)});
      if (list.size() > kMaxIdlePerKey) {
        closing = std::move(list.front().connection);
        list.pop_front();
      }
    }
  }
  // Closed outside the lock: a disconnect may wait on the network.
  closing.reset();
}

void SessionPool::reap() {
  std::vector<std::unique_ptr<SshConnection>> closing;
  {
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    for (auto it = kept_.begin(); it != kept_.end();) {
      auto& list = it->second;
      while (!list.empty() && now - list.front().used >= list.front().idle) {
        closing.push_back(std::move(list.front().connection));
        list.pop_front();
      }
      it = list.empty() ? kept_.erase(it) : std::next(it);
    }
  }
}

std::vector<KeptSessionInfo> SessionPool::list() const {
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  std::vector<KeptSessionInfo> out;
  for (const auto& [key, list] : kept_) {
    for (const Kept& k : list) {
      KeptSessionInfo info = k.info;
      info.age_s = seconds_since(k.made, now);
      info.idle_s = seconds_since(k.used, now);
      out.push_back(info);
    }
  }
  for (const auto& [id, lent] : lent_) {
    KeptSessionInfo info = lent.first;
    info.age_s = seconds_since(lent.second, now);
    info.in_use = true;
    out.push_back(info);
  }
  return out;
}

bool SessionPool::empty() const {
  std::lock_guard lock(mu_);
  return kept_.empty() && lent_.empty();
}

size_t SessionPool::close_all() {
  std::map<std::string, std::deque<Kept>> closing;
  {
    std::lock_guard lock(mu_);
    closing.swap(kept_);
  }
  size_t n = 0;
  for (auto& [key, list] : closing) n += list.size();
  return n;
}

}  // namespace tpurun::keeper

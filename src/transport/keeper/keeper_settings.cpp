#include "transport/keeper/keeper_settings.hpp"

#include <fmt/format.h>

namespace tpurun::keeper {

nlohmann::json settings_json(const SshTransportOptions& o) {
  return {{"user", o.ssh.user},
          {"identity_file", o.ssh.identity_file},
          {"identities_only", o.ssh.identities_only},
          {"known_hosts", o.ssh.known_hosts},
          {"host_key_policy", static_cast<int>(o.ssh.host_key_policy)},
          {"alias_known_hosts", o.ssh.alias_known_hosts},
          {"connect_timeout_s", o.ssh.connect_timeout_s},
          {"key_exchange", o.key_exchange}};
}

SshTransportOptions settings_from_json(const nlohmann::json& j) {
  SshTransportOptions o;
  o.ssh.user = j.value("user", "");
  o.ssh.identity_file = j.value("identity_file", "");
  o.ssh.identities_only = j.value("identities_only", false);
  o.ssh.known_hosts = j.value("known_hosts", std::vector<std::string>{});
  const int policy = j.value("host_key_policy", static_cast<int>(HostKeyPolicy::accept_new));
  o.ssh.host_key_policy = policy >= 0 && policy <= static_cast<int>(HostKeyPolicy::off)
                              ? static_cast<HostKeyPolicy>(policy)
                              : HostKeyPolicy::strict;
  o.ssh.alias_known_hosts = j.value("alias_known_hosts", "");
  o.ssh.connect_timeout_s = j.value("connect_timeout_s", 10);
  o.key_exchange = j.value("key_exchange", "");
  return o;
}

nlohmann::json worker_json(const Worker& w) {
  return {{"index", w.index}, {"host", w.host}, {"port", w.port}, {"alias", w.host_key_alias},
          {"slice", w.slice}, {"slice_worker", w.slice_worker}};
}

Worker worker_from_json(const nlohmann::json& j) {
  Worker w;
  w.index = j.value("index", 0);
  w.host = j.value("host", "");
  w.port = j.value("port", 22);
  w.host_key_alias = j.value("alias", "");
  w.slice = j.value("slice", -1);
  w.slice_worker = j.value("slice_worker", 0);
  return w;
}

std::string session_key(const nlohmann::json& settings, const Worker& w) {
  return fmt::format("{}|{}|{}|{}", settings.dump(), w.host, w.port, w.host_key_alias);
}

}  // namespace tpurun::keeper

#pragma once
// What a kept session is keyed by, as it crosses the keeper's socket: the
// pod's SSH settings (user, identity, known_hosts files, host key policy,
// timeouts, key exchange) and the worker (address, port, HostKeyAlias). A
// change in any of them is another key, so another connection.
#include <string>

#include <nlohmann/json.hpp>

#include "tpurun/pod/worker.hpp"
#include "transport/ssh_transport.hpp"

namespace tpurun::keeper {

nlohmann::json settings_json(const SshTransportOptions& options);
SshTransportOptions settings_from_json(const nlohmann::json& json);

nlohmann::json worker_json(const Worker& worker);
Worker worker_from_json(const nlohmann::json& json);

// The pool's key for one worker under one set of settings.
std::string session_key(const nlohmann::json& settings, const Worker& worker);

}  // namespace tpurun::keeper

#include "tpurun/transport/real_transport.hpp"

#include <cstdlib>

#include <spdlog/spdlog.h>

#include "tpurun/pod/describe_cache.hpp"
#include "tpurun/transport/keeper/keeper.hpp"
#include "transport/keeper/keeper_client.hpp"
#include "transport/keeper/keeper_settings.hpp"
#include "transport/local_transport.hpp"
#include "transport/redescribe.hpp"
#include "transport/ssh_transport.hpp"

namespace tpurun {

std::unique_ptr<Transport> make_real_transport(const PodConfig& pod, int verbosity, const Environment& env,
                                               ProcessRunner& processes, bool keep) {
  if (pod.local) return std::make_unique<LocalTransport>();
  SshTransportOptions options;
  options.ssh = pod.ssh;
  options.log_verbosity = verbosity > 1 ? verbosity - 1 : 0;
  if (const char* kex = std::getenv("TPURUN_SSH_KEX")) options.key_exchange = kex;
  keeper::KeeperClientOptions kept;
  kept.settings = keeper::settings_json(options);
  kept.connect_timeout_s = options.ssh.connect_timeout_s;
  std::unique_ptr<Transport> ssh = std::make_unique<SshTransport>(std::move(options));
  if (keep) {
    kept.idle = keeper_idle(env);
    auto place = kept.idle.count() > 0 ? keeper_place(env) : Result<KeeperPlace, std::string>(unexpected(std::string()));
    if (place) {
      kept.place = *place;
      ssh = keeper::keeper_transport(std::move(ssh), std::move(kept));
    } else if (!place.error().empty()) {
      spdlog::debug("keeper: not used: {}", place.error());
    }
  }
  if (!pod.gcloud || !pod.workers_from_cache) return ssh;
  return std::make_unique<RedescribeTransport>(
      std::move(ssh), [pod, &env, &processes] { return describe_again(pod, env, processes); });
}

}  // namespace tpurun

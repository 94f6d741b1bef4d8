#include "tpurun/transport/real_transport.hpp"

#include <cstdlib>

#include "tpurun/pod/describe_cache.hpp"
#include "transport/local_transport.hpp"
#include "transport/redescribe.hpp"
#include "transport/ssh_transport.hpp"

namespace tpurun {

std::unique_ptr<Transport> make_real_transport(const PodConfig& pod, int verbosity, const Environment& env,
                                               ProcessRunner& processes) {
  if (pod.local) return std::make_unique<LocalTransport>();
  SshTransportOptions options;
  options.ssh = pod.ssh;
  options.log_verbosity = verbosity > 1 ? verbosity - 1 : 0;
  if (const char* kex = std::getenv("TPURUN_SSH_KEX")) options.key_exchange = kex;
  std::unique_ptr<Transport> ssh = std::make_unique<SshTransport>(std::move(options));
  if (!pod.gcloud || !pod.workers_from_cache) return ssh;
  return std::make_unique<RedescribeTransport>(
      std::move(ssh), [pod, &env, &processes] { return describe_again(pod, env, processes); });
}

}  // namespace tpurun

#include "transport/real_transport.hpp"

#include <cstdlib>

#include "tpurun/local_transport.hpp"
#include "tpurun/ssh_transport.hpp"

namespace tpurun {

std::unique_ptr<Transport> make_real_transport(const PodConfig& pod, int verbosity) {
  if (pod.local) return std::make_unique<LocalTransport>();
  SshTransportOptions options;
  options.ssh = pod.ssh;
  options.log_verbosity = verbosity > 1 ? verbosity - 1 : 0;
  if (const char* kex = std::getenv("TPURUN_SSH_KEX")) options.key_exchange = kex;
  return std::make_unique<SshTransport>(std::move(options));
}

}  // namespace tpurun

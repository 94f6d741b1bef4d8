#pragma once
// The transports a real run uses: libssh for pods, local processes for the
// local "pod" (no config at all).
#include <memory>

#include "tpurun/pod.hpp"
#include "tpurun/transport.hpp"

namespace tpurun {

// `verbosity` is the CLI's -v count: -vv and up turn on libssh's own log.
std::unique_ptr<Transport> make_real_transport(const PodConfig& pod, int verbosity);

}  // namespace tpurun

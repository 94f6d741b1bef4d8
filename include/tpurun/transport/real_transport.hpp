#pragma once
// The transports a real run uses: libssh for pods, local processes for the
// local "pod" (no config at all).
#include <memory>

#include "tpurun/pod/pod.hpp"
#include "tpurun/transport/transport.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {

// `verbosity` is the CLI's -v count: -vv and up turn on libssh's own log.
// A gcloud pod whose workers came from a kept describe describes again when
// a worker does not answer as recorded (redescribe.hpp). With `keep`, SSH
// sessions go through the user's connection keeper (transport/keeper) unless
// TPURUN_KEEP=0; a run's watcher keeps its own.
std::unique_ptr<Transport> make_real_transport(const PodConfig& pod, int verbosity, const Environment& env,
                                               ProcessRunner& processes, bool keep = false);

}  // namespace tpurun

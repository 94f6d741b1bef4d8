#pragma once
// The first use of a gcloud pod, as the user meets it: their key is refused
// because gcloud never put it on this TPU VM. On a terminal tpurun offers to
// do what gcloud does (its own tpu-vm ssh, once), then tries again; otherwise
// the refusal names the exact command.
#include <memory>

#include "tpurun/pod/pod.hpp"
#include "tpurun/transport/context.hpp"
#include "tpurun/transport/transport.hpp"

namespace tpurun {

// `transport` itself for pods that are not gcloud pods.
std::unique_ptr<Transport> with_first_use_offer(std::unique_ptr<Transport> transport, const PodConfig& pod,
                                                Context& ctx);

}  // namespace tpurun

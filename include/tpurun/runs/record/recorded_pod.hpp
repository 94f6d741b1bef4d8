#pragma once
// kill --run RUN without --pod: the pod the run was started on, so that a run
// on a pod other than the default one (a multi-slice pod, say) is stopped on
// every one of its workers.
#include <optional>
#include <string>

#include "tpurun/pod/pod.hpp"
#include "tpurun/transport/context.hpp"

namespace tpurun {

// The pod recorded in RUN's run.json under `pod`'s logs_root, when RUN is found
// there and was started on another pod; nullopt otherwise.
std::optional<std::string> other_pod_of_run(const PodConfig& pod, const std::string& run, Context& ctx);

}  // namespace tpurun

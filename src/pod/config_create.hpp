#pragma once
// A pod's "create" block: how `tpurun up` makes its TPU VM (docs/config.md).
#include "config_node.hpp"
#include "tpurun/pod/pod.hpp"

namespace tpurun {

// Fails at the file:line of the offending key. `gcloud` gives the default zone.
CreateSpec read_create(const ConfigNode& node, const GcloudSpec& gcloud);

}  // namespace tpurun

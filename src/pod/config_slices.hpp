#pragma once
// The config's multi-slice pods: "slices": ["A", "B"] (docs/multislice.md).
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "config_node.hpp"
#include "tpurun/pod/pod.hpp"

namespace tpurun {

bool has_slices(const ConfigNode& pod_node);

// Adds the pods whose nodes have "slices" to `pods`, which holds every
// ordinary pod already. Fails at the file:line of the offending entry.
void read_slices_pods(const std::vector<std::pair<std::string, ConfigNode>>& nodes,
                      std::map<std::string, PodConfig>& pods);

}  // namespace tpurun

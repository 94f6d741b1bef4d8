#pragma once
// gcloud's --worker syntax: "all", "3", "1,4,6", "1-3", and mixes like "0,2-5".
#include <string>
#include <vector>

#include "tpurun/pod/pod.hpp"
#include "tpurun/util/usage_error.hpp"

namespace tpurun {

// Sorted, de-duplicated worker indices. Throws UsageError naming the bad part
// and the valid range (0..count-1).
std::vector<int> parse_worker_selection(const std::string& spec, int count);

// The pod with the workers that `spec` selects. Throws UsageError.
Target select_workers(PodConfig pod, const std::string& spec);

}  // namespace tpurun

#pragma once
// stage on a multi-slice pod (docs/multislice.md): what its jobs are told,
// and the flags that make no sense there.
#include <map>
#include <optional>
#include <string>

#include "tpurun/pod/pod.hpp"
#include "tpurun/pod/slices.hpp"

namespace tpurun {

// nullopt for an ordinary pod. Throws UsageError for a part of a multi-slice
// pod (--worker), --env setting a MEGASCALE_* variable tpurun sets, or
// --megascale-port (`port`, 0 when not given) on an ordinary pod.
std::optional<MultiSlice> plan_multislice(const Target& target, int port,
                                          const std::map<std::string, std::string>& env);

// The config pods that are the slices, in slice order.
std::vector<std::string> slice_pods(const PodConfig& pod);

// For --dry-run: "2 slices (A: w0-3, B: w4-7), coordinator 10.0.0.2:8080".
std::string multislice_text(const PodConfig& pod, const MultiSlice& ms);

}  // namespace tpurun

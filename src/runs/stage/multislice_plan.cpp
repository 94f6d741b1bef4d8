#include "tpurun/runs/stage/multislice_plan.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tpurun/pod/worker_select.hpp"

namespace tpurun {

std::optional<MultiSlice> plan_multislice(const Target& target, int port,
                                          const std::map<std::string, std::string>& env) {
  const PodConfig& pod = target.pod;
  if (pod.slices.empty()) {
    if (port != 0) {
      throw UsageError(fmt::format("--megascale-port: pod '{}' is a single slice; the MEGASCALE_* variables are for "
                                   "multi-slice runs (--pod A,B, or a pod with \"slices\"; docs/multislice.md)",
                                   pod.name));
    }
    return std::nullopt;
  }
  if (target.workers.size() != pod.workers.size()) {
    throw UsageError(fmt::format("--worker: a multi-slice run needs every worker of every slice ({} in all), since "
                                 "each waits for the others; tpurun exec --worker runs commands on some of them",
                                 pod.workers.size()));
  }
  for (const std::string& name : megascale_names()) {
    if (env.count(name)) {
      throw UsageError(fmt::format("--env {}: tpurun sets {} itself on a multi-slice run; change the port with "
                                   "--megascale-port or \"megascale_port\" in the config (docs/multislice.md)",
                                   name, fmt::join(megascale_names(), ", ")));
    }
  }
  return multislice_of(pod, port != 0 ? port : pod.megascale_port);
}

std::vector<std::string> slice_pods(const PodConfig& pod) {
  std::vector<std::string> names;
  for (const Slice& slice : pod.slices) names.push_back(slice.pod);
  return names;
}

std::string multislice_text(const PodConfig& pod, const MultiSlice& ms) {
  std::vector<std::string> parts;
  for (const Slice& s : pod.slices) {
    parts.push_back(fmt::format("{}: w{}-{}", s.pod, s.first_worker, s.first_worker + s.num_workers - 1));
  }
  return fmt::format("{} slices ({}), MEGASCALE_COORDINATOR_ADDRESS={}", ms.num_slices, fmt::join(parts, ", "),
                     slice_env(ms, pod.workers.at(0)).at(0).second);
}

}  // namespace tpurun

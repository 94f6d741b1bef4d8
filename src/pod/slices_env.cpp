// The variables that join the slices of a multi-slice run: the MEGASCALE_*
// ones libtpu reads (as MaxText's and levanter's launchers set them) and
// tpurun's own TPURUN_SLICE*.
#include <string>

#include "tpurun/pod/slices.hpp"

namespace tpurun {

std::vector<std::pair<std::string, std::string>> slice_env(const MultiSlice& ms, const Worker& worker) {
  const std::string port = std::to_string(ms.port);
  // An IPv6 address needs brackets before its port.
  const bool ipv6 = ms.coordinator.find(':') != std::string::npos;
  const std::string address = (ipv6 ? "[" + ms.coordinator + "]" : ms.coordinator) + ":" + port;
  return {{"MEGASCALE_COORDINATOR_ADDRESS", address},
          {"MEGASCALE_NUM_SLICES", std::to_string(ms.num_slices)},
          {"MEGASCALE_SLICE_ID", std::to_string(worker.slice)},
          {"MEGASCALE_PORT", port},
          {"TPURUN_SLICE", std::to_string(worker.slice)},
          {"TPURUN_SLICE_WORKER", std::to_string(worker.slice_worker)},
          {"TPURUN_NUM_SLICES", std::to_string(ms.num_slices)}};
}

const std::vector<std::string>& megascale_names() {
  static const std::vector<std::string> names = {"MEGASCALE_COORDINATOR_ADDRESS", "MEGASCALE_NUM_SLICES",
                                                 "MEGASCALE_SLICE_ID", "MEGASCALE_PORT"};
  return names;
}

}  // namespace tpurun

#include "tpurun/runs/record/recorded_pod.hpp"

#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/util/identity.hpp"

namespace tpurun {

std::optional<std::string> other_pod_of_run(const PodConfig& pod, const std::string& run, Context& ctx) {
  if (pod.logs_root.empty() || run.empty()) return std::nullopt;
  try {
    const std::string recorded = read_run_record(find_run_dir(pod.logs_root, local_user(ctx.env), run)).pod;
    if (recorded != pod.name) return recorded;
  } catch (const std::exception&) {
    // not one of this user's recorded runs: kill by TPURUN_RUN_ID on the pod given
  }
  return std::nullopt;
}

}  // namespace tpurun

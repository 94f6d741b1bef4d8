#include "tpurun/fanout/gather.hpp"

#include <algorithm>
#include <map>

namespace tpurun {

std::vector<OutputGroup> group_identical_outputs(const std::vector<WorkerOutcome>& outcomes) {
  std::map<std::pair<std::string, std::string>, std::vector<int>> by_output;
  for (const WorkerOutcome& o : outcomes) {
    if (o.error() != nullptr) continue;  // reported in the failure summary instead
    by_output[{o.out, o.err}].push_back(o.worker.index);
  }
  std::vector<OutputGroup> groups;
  for (auto& [output, workers] : by_output) {
    std::sort(workers.begin(), workers.end());
    groups.push_back({workers, output.first, output.second});
  }
  std::stable_sort(groups.begin(), groups.end(), [](const OutputGroup& a, const OutputGroup& b) {
    if (a.workers.size() != b.workers.size()) return a.workers.size() > b.workers.size();
    return a.workers.front() < b.workers.front();
  });
  return groups;
}

std::string compact_worker_set(const std::vector<int>& indices) {
  if (indices.size() == 1) return "w" + std::to_string(indices[0]);
  std::vector<int> sorted = indices;
  std::sort(sorted.begin(), sorted.end());
  std::string ranges;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!ranges.empty()) ranges += ",";
    ranges += std::to_string(sorted[i]);
    if (j > i) ranges += "-" + std::to_string(sorted[j]);
    i = j + 1;
  }
  return "w[" + ranges + "]";
}

}  // namespace tpurun

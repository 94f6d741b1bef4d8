#pragma once
// --gather: identical outputs printed once, with the set of workers that
// produced them (like `clush -b`).
#include <string>
#include <vector>

#include "tpurun/transport/outcome.hpp"

namespace tpurun {

struct OutputGroup {
  std::vector<int> workers;  // worker indices, ascending
  std::string out;
  std::string err;
};

// Groups the workers that ran (reachable ones) by identical stdout and stderr,
// largest group first.
std::vector<OutputGroup> group_identical_outputs(const std::vector<WorkerOutcome>& outcomes);

// {0,1,2,3,5} -> "w[0-3,5]"; {4} -> "w4".
std::string compact_worker_set(const std::vector<int>& indices);

}  // namespace tpurun

#pragma once
// gcloud's --worker syntax: "all", "3", "1,4,6", "1-3", and mixes like "0,2-5".
#include <stdexcept>
#include <string>
#include <vector>

namespace tpurun {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Sorted, de-duplicated worker indices. Throws UsageError naming the bad part
// and the valid range (0..count-1).
std::vector<int> parse_worker_selection(const std::string& spec, int count);

}  // namespace tpurun

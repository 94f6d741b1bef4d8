#pragma once
// A mistake in what the user asked for (a flag, a name, a value): the CLI
// prints "tpurun: error: ..." and exits 2.
#include <stdexcept>

namespace tpurun {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tpurun

#pragma once
// Ctrl-C as a value that long-running work polls, instead of a process exit.
#include <atomic>
#include <stdexcept>

namespace tpurun {

class CancelToken {
 public:
  CancelToken() = default;
  explicit CancelToken(const std::atomic<bool>* flag) : flag_(flag) {}
  bool cancelled() const { return flag_ != nullptr && flag_->load(std::memory_order_relaxed); }

 private:
  const std::atomic<bool>* flag_ = nullptr;
};

// Thrown when Ctrl-C stops work that has nothing per-worker to report;
// the CLI prints it and exits 130.
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Installs a SIGINT/SIGTERM handler: the first signal sets the returned flag,
// a second one exits at once with 130.
const std::atomic<bool>* install_interrupt_handler();

}  // namespace tpurun

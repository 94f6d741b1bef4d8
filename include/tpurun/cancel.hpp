#pragma once
// Ctrl-C as a value that long-running work polls, instead of a process exit.
#include <atomic>
#include <stdexcept>

namespace tpurun {

class CancelToken {
 public:
  CancelToken() = default;
  explicit CancelToken(const std::atomic<bool>* flag) : flag_(flag) {}
  bool cancelled() const {
    return (flag_ != nullptr && flag_->load(std::memory_order_relaxed)) ||
           (also_ != nullptr && also_->load(std::memory_order_relaxed));
  }
  // This token, and also cancelled once `also` is set: work that a sibling's
  // failure makes pointless (a snapshot whose preflight refused).
  CancelToken or_when(const std::atomic<bool>* also) const {
    CancelToken t(flag_);
    t.also_ = also;
    return t;
  }

 private:
  const std::atomic<bool>* flag_ = nullptr;
  const std::atomic<bool>* also_ = nullptr;
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

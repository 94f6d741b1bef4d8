#pragma once
// Ctrl-C as a value that long-running work polls, instead of a process exit.
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>

namespace tpurun {

class CancelToken {
 public:
  CancelToken() = default;
  explicit CancelToken(const std::atomic<bool>* flag) : flag_(flag) {}
  bool cancelled() const {
    return (flag_ != nullptr && flag_->load(std::memory_order_relaxed)) ||
           (also_ != nullptr && also_->load(std::memory_order_relaxed)) || expired();
  }
  // This token, and also cancelled once `also` is set: work that a sibling's
  // failure makes pointless (a snapshot whose preflight refused).
  CancelToken or_when(const std::atomic<bool>* also) const {
    CancelToken t = *this;
    t.also_ = also;
    return t;
  }
  // This token, and also cancelled from `deadline` on: work given a time limit.
  CancelToken until(std::chrono::steady_clock::time_point deadline) const {
    CancelToken t = *this;
    t.deadline_ = deadline;
    return t;
  }
  bool expired() const {
    return deadline_ != std::chrono::steady_clock::time_point{} && std::chrono::steady_clock::now() >= deadline_;
  }

 private:
  const std::atomic<bool>* flag_ = nullptr;
  const std::atomic<bool>* also_ = nullptr;
  std::chrono::steady_clock::time_point deadline_{};
};

// Thrown when Ctrl-C stops work that has nothing per-worker to report;
// the CLI prints it and exits 130.
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Installs a SIGINT/SIGTERM/SIGHUP handler: the first signal sets the
// returned flag, a second one exits at once (130, 143 or 129), after writing
// the last words (below) to stderr.
const std::atomic<bool>* install_interrupt_handler();

// What a second signal's exit must still say ("" for nothing): what the work
// made that may now be left behind, and the command that deletes it. Set
// from one thread at a time; the handler reads it without a lock.
void set_interrupt_last_words(const std::string& text);

// "interrupted by Ctrl-C", "interrupted by SIGTERM" or "interrupted by SIGHUP": which signal it was.
std::string interrupted_by();
// 130 after Ctrl-C (SIGINT), 143 after SIGTERM, 129 after SIGHUP.
int interrupt_exit_code();

}  // namespace tpurun

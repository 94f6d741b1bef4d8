#include <csignal>
#include <unistd.h>

#include "tpurun/util/cancel.hpp"

namespace tpurun {
namespace {

std::atomic<bool> g_interrupted{false};

void on_signal(int) {
  if (g_interrupted.exchange(true)) _exit(130);
  static const char msg[] = "\ntpurun: interrupted; finishing up (Ctrl-C again to quit at once)\n";
  [[maybe_unused]] auto n = write(STDERR_FILENO, msg, sizeof msg - 1);
}

}  // namespace

const std::atomic<bool>* install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return &g_interrupted;
}

}  // namespace tpurun

#include <csignal>
#include <unistd.h>

#include "tpurun/util/cancel.hpp"

namespace tpurun {
namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signal{0};
bool g_stderr_tty = false;

void on_signal(int sig) {
  if (g_interrupted.exchange(true)) _exit(128 + sig);
  g_signal = sig;
  // Only where someone watches: a detached watcher's stderr is its log.
  if (!g_stderr_tty) return;
  static const char ctrl_c[] = "\ntpurun: interrupted; finishing up (Ctrl-C again to quit at once)\n";
  static const char term[] = "tpurun: SIGTERM; finishing up (again to quit at once)\n";
  const bool is_term = sig == SIGTERM;
  [[maybe_unused]] auto n = write(STDERR_FILENO, is_term ? term : ctrl_c, (is_term ? sizeof term : sizeof ctrl_c) - 1);
}

}  // namespace

const std::atomic<bool>* install_interrupt_handler() {
  g_stderr_tty = ::isatty(STDERR_FILENO) == 1;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return &g_interrupted;
}

std::string interrupted_by() {
  return g_signal.load() == SIGTERM ? "interrupted by SIGTERM" : "interrupted by Ctrl-C";
}

int interrupt_exit_code() { return g_signal.load() == SIGTERM ? 143 : 130; }

}  // namespace tpurun

#include <csignal>
#include <cstring>
#include <unistd.h>

#include "tpurun/util/cancel.hpp"

namespace tpurun {
namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signal{0};
bool g_stderr_tty = false;

// The last words: two buffers, the one being read never written (the
// handler may run in the middle of an update).
constexpr size_t kLastWordsSize = 2048;
char g_last_words[2][kLastWordsSize];
std::atomic<int> g_last_words_at{-1};

void write_all(const char* text, size_t n) {
  while (n > 0) {
    const ssize_t w = write(STDERR_FILENO, text, n);
    if (w <= 0) return;
    text += w;
    n -= static_cast<size_t>(w);
  }
}

void on_signal(int sig) {
  if (g_interrupted.exchange(true)) {
    const int at = g_last_words_at.load();
    if (at >= 0) write_all(g_last_words[at], strnlen(g_last_words[at], kLastWordsSize));
    _exit(128 + sig);
  }
  g_signal = sig;
  // Only where someone watches: a detached watcher's stderr is its log.
  if (!g_stderr_tty) return;
  static const char ctrl_c[] = "\ntpurun: interrupted; finishing up (Ctrl-C again to quit at once)\n";
  static const char term[] = "tpurun: SIGTERM; finishing up (again to quit at once)\n";
  static const char hup[] = "tpurun: SIGHUP; finishing up (again to quit at once)\n";
  const char* text = sig == SIGTERM ? term : sig == SIGHUP ? hup : ctrl_c;
  write_all(text, std::strlen(text));
}

}  // namespace

const std::atomic<bool>* install_interrupt_handler() {
  g_stderr_tty = ::isatty(STDERR_FILENO) == 1;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return &g_interrupted;
}

void set_interrupt_last_words(const std::string& text) {
  if (text.empty()) {
    g_last_words_at = -1;
    return;
  }
  const int next = g_last_words_at.load() == 0 ? 1 : 0;
  const size_t n = std::min(text.size(), kLastWordsSize - 1);
  std::memcpy(g_last_words[next], text.data(), n);
  g_last_words[next][n] = '\0';
  g_last_words_at = next;
}

std::string interrupted_by() {
  switch (g_signal.load()) {
    case SIGTERM: return "interrupted by SIGTERM";
    case SIGHUP: return "interrupted by SIGHUP";
    default: return "interrupted by Ctrl-C";
  }
}

int interrupt_exit_code() {
  const int sig = g_signal.load();
  return sig == SIGTERM || sig == SIGHUP ? 128 + sig : 130;
}

}  // namespace tpurun

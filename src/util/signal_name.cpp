#include "tpurun/util/signal_name.hpp"

#include <signal.h>
#include <string.h>

// TPURUN_HAVE_SIGABBREV_NP comes from the feature test in CMakeLists.txt:
// glibc >= 2.32 has sigabbrev_np; older ones (Debian 11, Ubuntu 20.04) get
// the same names from the table below.

namespace tpurun {

std::string signal_abbrev(int sig) {
#ifdef TPURUN_HAVE_SIGABBREV_NP
  const char* name = ::sigabbrev_np(sig);
#else
  // Linux's standard signals, as glibc's sigabbrev_np names them.
  static const char* const names[] = {
      nullptr, "HUP",  "INT",  "QUIT", "ILL",    "TRAP", "ABRT", "BUS",   "FPE",  "KILL", "USR1",
      "SEGV",  "USR2", "PIPE", "ALRM", "TERM",   "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN",
      "TTOU",  "URG",  "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "POLL",  "PWR",  "SYS"};
  const char* name = sig > 0 && sig < static_cast<int>(sizeof names / sizeof *names) ? names[sig] : nullptr;
#endif
  return name ? name : std::to_string(sig);
}

}  // namespace tpurun

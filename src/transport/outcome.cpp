#include "tpurun/transport/outcome.hpp"

#include <csignal>
#include <fmt/format.h>

namespace tpurun {

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::connect: return "connect";
    case ErrorKind::timeout: return "timeout";
    case ErrorKind::hostkey: return "hostkey";
    case ErrorKind::auth: return "auth";
    case ErrorKind::channel: return "channel";
    case ErrorKind::interrupted: return "interrupted";
    case ErrorKind::local: return "local";
    case ErrorKind::deadline: return "deadline";
    case ErrorKind::refused: return "refused";
  }
  return "unknown";
}

bool WorkerOutcome::ok() const {
  const CommandExit* e = exit();
  return e != nullptr && e->code == 0;
}

int aggregate_exit_code(const std::vector<WorkerOutcome>& outcomes) {
  bool unreachable = false;
  bool interrupted = false;
  bool deadline = false;
  int worst = 0;
  for (const WorkerOutcome& o : outcomes) {
    if (const TransportError* e = o.error()) {
      if (e->kind == ErrorKind::interrupted) interrupted = true;
      else if (e->kind == ErrorKind::deadline) deadline = true;
      else unreachable = true;
    } else if (o.exit()->code > worst) {
      worst = o.exit()->code;
    }
  }
  if (unreachable) return 255;
  if (interrupted) return 130;
  if (deadline) return 124;
  return worst;
}

std::vector<std::string> failure_summary(const std::vector<WorkerOutcome>& outcomes) {
  std::vector<std::string> lines;
  for (const WorkerOutcome& o : outcomes) {
    if (const TransportError* e = o.error()) {
      lines.push_back(fmt::format("{}: {}", o.worker.display(), e->message));
    } else if (o.exit()->signal) {
      lines.push_back(fmt::format("{}: killed by signal {}", o.worker.display(), *o.exit()->signal));
    } else if (o.exit()->code != 0) {
      lines.push_back(fmt::format("{}: exited with code {}", o.worker.display(), o.exit()->code));
    }
  }
  return lines;
}

int signal_number(const std::string& name) {
  static const std::pair<const char*, int> table[] = {
      {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"ILL", SIGILL},
      {"ABRT", SIGABRT}, {"FPE", SIGFPE},   {"KILL", SIGKILL}, {"SEGV", SIGSEGV},
      {"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"TERM", SIGTERM}, {"USR1", SIGUSR1},
      {"USR2", SIGUSR2}, {"BUS", SIGBUS},   {"TRAP", SIGTRAP}, {"XCPU", SIGXCPU}};
  for (const auto& [n, v] : table) {
    if (name == n) return v;
  }
  return 0;
}

}  // namespace tpurun

#pragma once
// What happened on one worker, as a value. The exit code and the summary of a
// whole command are computed once, from the vector of outcomes.
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "tpurun/pod/worker.hpp"

namespace tpurun {

// timeout: the worker did not answer (connect, keepalives); deadline: the
// command ran past exec --timeout and was stopped; refused: a stream to a port
// on the worker found nothing listening there (Connection::open_stream).
enum class ErrorKind { connect, timeout, hostkey, auth, channel, interrupted, local, deadline, refused };
const char* to_string(ErrorKind kind);

// The worker could not be reached, or the session broke.
struct TransportError {
  ErrorKind kind = ErrorKind::connect;
  std::string message;  // says what failed and what to do next
};

// The remote command ran and ended.
struct CommandExit {
  int code = 0;                       // 128+N when killed by signal N
  std::optional<std::string> signal;  // "TERM", "KILL", ... when killed by a signal
};

struct WorkerOutcome {
  Worker worker;
  std::variant<CommandExit, TransportError> result;
  std::string out;  // captured output, when the caller asked for it
  std::string err;
  double duration_s = 0;

  bool ok() const;  // exited 0
  const TransportError* error() const { return std::get_if<TransportError>(&result); }
  const CommandExit* exit() const { return std::get_if<CommandExit>(&result); }
};

// 0 when every worker exited 0; 255 when any worker could not be reached or
// authenticated; 130 when interrupted; 124 (as timeout(1)) when a command ran
// past its deadline; otherwise the largest remote exit code.
int aggregate_exit_code(const std::vector<WorkerOutcome>& outcomes);

// One line per worker that did not exit 0, e.g.
// "w2 127.0.1.3: connect timed out after 10s". Empty when all succeeded.
std::vector<std::string> failure_summary(const std::vector<WorkerOutcome>& outcomes);

// Signal name ("TERM") to number, 0 when unknown.
int signal_number(const std::string& name);

}  // namespace tpurun

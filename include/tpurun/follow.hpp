#pragma once
// Following a run: tailing every worker's log on the shared logs root, and
// knowing when each worker's job has ended.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/cancel.hpp"
#include "tpurun/outcome.hpp"
#include "tpurun/printer.hpp"
#include "tpurun/run_record.hpp"
#include "tpurun/transport.hpp"

namespace tpurun {

// Asks each worker which of its given pids are still alive: one short command
// per worker. Result: worker index -> pid -> alive; a worker that could not be
// asked is absent.
using PidsByWorker = std::map<int, std::vector<int>>;
std::map<int, std::map<int, bool>> pids_alive(Transport& transport, const std::vector<Worker>& workers,
                                              const PidsByWorker& pids, int fanout, const CancelToken& cancel);

class LogFollower {
 public:
  LogFollower(std::string log_dir, std::vector<Worker> workers, LinePrinter& printer);
  // Prints whatever was appended to the logs since the last call.
  void drain();
  // Prints last lines that had no newline.
  void flush();
  // The jobs' states from the log dir's files (pending, running or exited).
  std::vector<WorkerJob> jobs() const;

 private:
  struct Tail {
    Worker worker;
    std::string path;
    long long offset = 0;
    PrefixedSink sink;
  };
  std::string log_dir_;
  std::vector<Tail> tails_;
};

struct FollowResult {
  std::vector<WorkerOutcome> outcomes;  // exit codes, or an error for lost/unknown jobs
  bool interrupted = false;             // Ctrl-C: the jobs keep running
};

// Tails the run until every selected worker's job has ended, or Ctrl-C.
// Every `liveness_every` polls it asks the workers whether jobs without an
// exit record are still alive, so a job killed with SIGKILL is not waited on
// forever.
FollowResult follow_run(const std::string& log_dir, const std::vector<Worker>& workers, LinePrinter& printer,
                        Transport& transport, int fanout, const CancelToken& cancel, bool follow = true);

}  // namespace tpurun

#pragma once
// Following a run from the dev VM: tailing every worker's log on the shared
// logs root and the supervisor's messages, until the supervisor's state.json
// says the run has ended. No SSH here: a stalled worker can never hold up the
// others' output (liveness is the supervisor's job).
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/cancel.hpp"
#include "tpurun/file_watch.hpp"
#include "tpurun/live_output.hpp"
#include "tpurun/outcome.hpp"
#include "tpurun/printer.hpp"
#include "tpurun/run_record.hpp"
#include "tpurun/run_state.hpp"
#include "tpurun/transport.hpp"

namespace tpurun {

// Asks each worker which of its given pids are still alive: one short command
// per worker. Result: worker index -> pid -> alive; a worker that could not be
// asked is absent. (For runs made before the supervisor existed.)
using PidsByWorker = std::map<int, std::vector<int>>;
std::map<int, std::map<int, bool>> pids_alive(Transport& transport, const std::vector<Worker>& workers,
                                              const PidsByWorker& pids, int fanout, const CancelToken& cancel);

// Tails the workers' logs into a LiveOutput (collapsed or raw).
class LogFollower {
 public:
  LogFollower(std::string log_dir, std::vector<Worker> workers, LiveOutput& live);
  ~LogFollower();
  LogFollower(const LogFollower&) = delete;
  LogFollower& operator=(const LogFollower&) = delete;
  // Prints whatever was appended to the logs since the last call, at most
  // 64 KiB per worker per pass, round robin, so that long logs from many
  // workers still line up for collapsing. Files stay open between calls, so
  // following costs reads, not opens.
  void drain();
  // The same for some workers only: positions in the worker list given to
  // the constructor (a FileWatch said their logs changed). True when anything
  // was read.
  bool drain(const std::vector<int>& positions);
  // Each worker's log file name in the log dir, in the order given.
  std::vector<std::string> file_names() const;
  // The worker's job has ended: its last output is printed and collapsed
  // lines stop waiting for it.
  void ended(int worker_index, bool ok);
  // Prints last lines that had no newline, and everything still held.
  void finish();

 private:
  struct Tail {
    Worker worker;
    std::string path;
    int fd = -1;
    long long offset = 0;
    bool ended = false;
  };
  bool drain_once(Tail& tail);  // up to 64 KiB; true when anything was read
  std::string log_dir_;
  std::vector<Tail> tails_;
  LiveOutput& live_;
};

struct FollowResult {
  std::optional<RunState> state;  // the last state seen (final unless interrupted)
  bool interrupted = false;       // Ctrl-C: the jobs keep running
};

struct FollowHooks {
  bool raw = false;  // print every line as it comes (no collapsing)
  // Called when the run has no live supervisor (it died, or never started);
  // returns false when it could not start one.
  std::function<bool()> watch_again;
  // How to notice that the logs grew (TPURUN_FOLLOW_WATCH; file_watch.hpp).
  WatchMethod watch_method = WatchMethod::automatic;
};

// Tails the run until the supervisor records a final verdict, or Ctrl-C.
// It reads only the files that a FileWatch reports changed, and reads
// state.json only when it changed, so that following an idle run costs
// about nothing with inotify, and one statx per file per 0.8 s on NFS.
FollowResult follow_run(const std::string& log_dir, const std::vector<Worker>& workers, LinePrinter& printer,
                        const CancelToken& cancel, const FollowHooks& hooks);

// The last `n` lines of a file (at most its last 64 KiB).
std::vector<std::string> last_lines(const std::string& path, size_t n);

}  // namespace tpurun

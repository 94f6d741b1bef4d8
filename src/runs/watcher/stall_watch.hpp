#pragma once
// The watcher's stall watch over one run (docs/runs.md, "Stalled runs"): a
// metrics round at a time (DutyProber), plus the workers' log sizes, through
// StallRule; it keeps the run's stalled/idle times and the board's idle mark.
// Split from the watcher so that it stays one concern per file.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runs/watcher/duty_prober.hpp"
#include "runs/watcher/stall_rule.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/transport/transport.hpp"

namespace tpurun {

class StallWatch {
 public:
  using Time = std::chrono::system_clock::time_point;
  using Say = std::function<void(const std::string&)>;
  // `logs_root` holds the board ("" for none).
  StallWatch(const RunRecord& record, std::string logs_root, Transport& transport, int fanout, Say say);

  // (Re)starts the metrics rounds on these workers (after a move, too).
  void start(const std::vector<Worker>& workers);
  // Call while the attempt is running: takes the latest round, if any. When
  // the run has just become stalled and --on-stall asks for action, returns
  // what the gang monitor needs (when, and the one-line detail).
  struct Stalled {
    Time at;
    std::string detail;
    bool may_restart = false;  // --on-stall restart
  };
  std::optional<Stalled> look();
  // A new attempt, or the run's end: nothing quiet, nothing idle any more.
  void clear();

  const std::string& stalled_since() const { return stalled_since_; }  // ISO 8601 while stalled
  const std::string& idle_since() const { return idle_since_; }        // ISO 8601 while every chip is at 0%

 private:
  long long log_bytes() const;
  void publish_idle(std::optional<Time> since);

  const RunRecord& record_;
  std::string logs_root_;
  Transport& transport_;
  int fanout_;
  Say say_;
  StallRule stall_;
  std::unique_ptr<DutyProber> duty_;
  long long log_bytes_ = -1;
  std::string stalled_since_;
  std::string idle_since_;
  bool idle_mark_failed_ = false;
};

}  // namespace tpurun

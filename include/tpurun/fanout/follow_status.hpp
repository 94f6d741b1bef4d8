#pragma once
// The status line at the bottom of followed output on a terminal: how many
// workers run, exited or failed, and which running worker has been quiet much
// longer than its peers (on a big pod, one worker stuck in compilation is the
// usual cause of a hang).
#include <chrono>
#include <string>
#include <vector>

namespace tpurun {

enum class WorkerRunState { running, exited, failed };

struct WorkerActivity {
  int worker = 0;
  WorkerRunState state = WorkerRunState::running;
  std::chrono::seconds quiet{0};  // since its last output, or since following began
};

// A running worker is quiet when it has been silent for at least `at_least`
// and for at least `times_median` times the median silence of the running
// workers. With fewer than two running workers nobody is.
struct QuietRule {
  std::chrono::seconds at_least{30};
  double times_median = 5.0;
};

// The quiet workers' indices, the quietest first.
std::vector<int> quiet_workers(const std::vector<WorkerActivity>& workers, const QuietRule& rule = {});

// "8 workers: 6 running, 1 exited, 1 failed · quiet: w7 4m (others ≤ 3s)".
// At most three quiet workers are named; the rest are counted.
std::string format_follow_status(const std::vector<WorkerActivity>& workers, const QuietRule& rule = {});

}  // namespace tpurun

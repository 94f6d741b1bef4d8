#include "runs/watcher/flight_recorder.hpp"

#include <fmt/format.h>

#include "tpurun/fanout/collapse.hpp"
#include "tpurun/runs/stacks/stacks.hpp"

namespace tpurun {
namespace {

// Each process's dump, and the whole capture on a worker: the stop waits no
// longer than this for the evidence.
constexpr long long kDumpTimeoutMs = 1500;
constexpr long long kBoundMs = 5000;

}  // namespace

std::string record_flight(const RunRecord& record, const std::vector<Worker>& workers, int skip,
                          const std::string& reason, Transport& transport, int fanout, const CancelToken& cancel) {
  std::vector<Worker> asked;
  for (const Worker& w : workers) {
    if (w.index != skip) asked.push_back(w);
  }
  if (asked.empty()) return "no stacks taken: no worker left to ask";
  const StacksRequest request{record.run_id, workers_log_dir(record), kDumpTimeoutMs, false, fanout, kBoundMs, false, {}};
  const std::vector<WorkerStacks> stacks = take_stacks(asked, transport, request, cancel);
  std::vector<int> with;
  for (const WorkerStacks& s : stacks) {
    if (s.has_stack()) with.push_back(s.worker.index);
  }
  try {
    const std::string dir = save_capture(record.log_dir, record.run_id, reason, std::chrono::system_clock::now(), stacks);
    const std::string rel = dir.substr(record.log_dir.size() + 1);
    if (with.empty()) return fmt::format("stacks saved in {} (no worker had a Python stack)", rel);
    return fmt::format("stacks of {} saved in {} (tpurun stacks {})", worker_range_label(with), rel, record.run_id);
  } catch (const std::exception& e) {
    return fmt::format("stacks not saved: {}", e.what());
  }
}

}  // namespace tpurun

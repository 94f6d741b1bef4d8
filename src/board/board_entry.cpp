// The board's view of one pod: its state from its workers' verdicts and the
// jobs that hold it, merged across workers.
#include "tpurun/board/board_entry.hpp"

#include <algorithm>

#include "tpurun/tpu/holders.hpp"
#include "tpurun/util/text.hpp"

namespace tpurun {
namespace {

bool held(TpuState s) { return s == TpuState::busy_self || s == TpuState::busy_other || s == TpuState::stale_lock; }

}  // namespace

std::string pod_state(const std::vector<WorkerScanResult>& workers) {
  if (workers.empty()) return "error";
  auto count = [&](auto pred) { return std::count_if(workers.begin(), workers.end(), pred); };
  const auto n = static_cast<long>(workers.size());
  const long busy = count([](const WorkerScanResult& r) { return held(r.state); });
  if (count([](const WorkerScanResult& r) { return r.state == TpuState::unreachable; }) == n) return "unreachable";
  if (busy == n) return "busy";
  if (busy > 0) return "partial";
  if (count([](const WorkerScanResult& r) { return r.state == TpuState::unreachable; }) > 0) return "unreachable";
  if (count([](const WorkerScanResult& r) { return r.state == TpuState::error; }) > 0) return "error";
  if (count([](const WorkerScanResult& r) { return r.state == TpuState::partial; }) > 0) return "partial";
  return "free";
}

std::vector<BoardHolder> pod_holders(const std::vector<WorkerScanResult>& workers) {
  std::vector<BoardHolder> out;
  for (const WorkerScanResult& r : workers) {
    if (!r.scan) continue;
    for (const HolderJob& job : holder_jobs(tpu_users(*r.scan))) {
      const ScannedProcess& p = job.leader;
      std::string command = short_command(p.command);
      auto same = std::find_if(out.begin(), out.end(), [&](const BoardHolder& h) {
        return h.user == p.user && h.command == command && h.run_id == p.run_id;
      });
      if (same == out.end()) {
        out.push_back({p.user, p.elapsed_s, command, p.run_id, {r.worker.index}, std::nullopt});
      } else {
        same->elapsed_s = std::max(same->elapsed_s, p.elapsed_s);
        same->workers.push_back(r.worker.index);
      }
    }
  }
  return out;
}

int board_exit_code(const std::vector<BoardEntry>& entries, const CancelToken& cancel) {
  if (cancel.cancelled()) return 130;
  bool any_error = std::any_of(entries.begin(), entries.end(), [](const BoardEntry& e) { return e.state == "error"; });
  return any_error ? 1 : 0;
}

}  // namespace tpurun

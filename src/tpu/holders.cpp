// Who keeps a worker's TPU busy, grouped into jobs, and the exit code of a
// look at the TPUs.
#include "tpurun/tpu/holders.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

namespace tpurun {

std::vector<HolderJob> holder_jobs(const std::vector<ScannedProcess>& holders) {
  std::map<std::pair<int, int>, std::vector<const ScannedProcess*>> by_group;  // (uid, pgid)
  for (const ScannedProcess& p : holders) {
    // pgid 0: the group lies outside the worker's PID namespace; each its own job.
    by_group[{p.uid, p.pgid > 0 ? p.pgid : -p.pid}].push_back(&p);
  }
  std::vector<HolderJob> jobs;
  for (auto& [key, members] : by_group) {
    auto leader = std::find_if(members.begin(), members.end(),
                               [&](const ScannedProcess* p) { return p->pid == p->pgid; });
    if (leader == members.end()) {
      leader = std::max_element(
          members.begin(), members.end(),
          [](const ScannedProcess* a, const ScannedProcess* b) { return a->elapsed_s < b->elapsed_s; });
    }
    jobs.push_back({**leader, static_cast<int>(members.size()) - 1});
  }
  std::sort(jobs.begin(), jobs.end(),
            [](const HolderJob& a, const HolderJob& b) { return a.leader.pid < b.leader.pid; });
  return jobs;
}

std::vector<ScannedProcess> tpu_users(const LockScan& scan) {
  std::vector<ScannedProcess> users = scan.holders;
  if (scan.lock_holder) users.push_back(*scan.lock_holder);
  return users;
}

int tpu_exit_code(const std::vector<TpuState>& states) {
  int code = 0;
  for (TpuState s : states) {
    if (s == TpuState::unreachable || s == TpuState::error) return 255;
    if (!is_free(s)) code = 1;
  }
  return code;
}

std::vector<std::string> other_users_on_tpu(const std::vector<WorkerScanResult>& scans) {
  std::vector<std::string> lines;
  for (const WorkerScanResult& r : scans) {
    if (r.state != TpuState::busy_other || !r.scan) continue;
    std::vector<std::string> who;
    for (const ScannedProcess& p : r.scan->holders) {
      if (p.uid != r.scan->caller_uid) who.push_back(fmt::format("{} pid {}", p.user, p.pid));
    }
    lines.push_back(fmt::format("{} ({})", r.worker.display(),
                                who.empty() ? "its TPU lock" : fmt::format("{}", fmt::join(who, ", "))));
  }
  return lines;
}

}  // namespace tpurun

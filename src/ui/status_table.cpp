// The status table: identical rows grouped by worker set, then every other
// user's job, then notes with fixes.
#include "tpurun/ui/status_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "tpurun/fanout/gather.hpp"
#include "tpurun/tpu/holders.hpp"
#include "tpurun/ui/tpu_view.hpp"

namespace tpurun {
namespace {

constexpr size_t kCommandWidth = 64;

// "w[0-1,7]" -> "0-1,7", the --worker argument that selects the same set.
std::string worker_arg(const std::vector<int>& indices) {
  std::string set = compact_worker_set(indices);
  return set.rfind("w[", 0) == 0 ? set.substr(2, set.size() - 3) : set.substr(1);
}

std::string jobs_summary(const std::vector<HolderJob>& jobs, size_t width, bool with_user) {
  std::vector<std::string> parts;
  for (const HolderJob& job : jobs) {
    std::string run = job.leader.run_id ? " [run " + *job.leader.run_id + "]" : "";
    std::string part = (with_user ? job.leader.user + ": " : "") +
                       truncate_text(short_command(job.leader.command), width) + run;
    if (std::find(parts.begin(), parts.end(), part) == parts.end()) parts.push_back(part);
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

// What follows the state on a worker's row; workers with equal rows share one.
std::string row_detail(const WorkerScanResult& r) {
  if (!r.scan) return r.error;
  const LockScan& s = *r.scan;
  std::vector<ScannedProcess> mine, others;
  for (const ScannedProcess& p : tpu_users(s)) (p.uid == s.caller_uid ? mine : others).push_back(p);
  const std::string lock_owner = s.lockfile.owner ? s.lockfile.owner->user : "?";
  switch (r.state) {
    case TpuState::busy_other:
      if (others.empty())
        return fmt::format("the libtpu lock is held by pid {}, which could not be inspected",
                           s.lockfile.holder_pid.value_or(0));
      return jobs_summary(holder_jobs(others), 48, true);
    case TpuState::busy_self: return "yours: " + jobs_summary(holder_jobs(mine), 48, false);
    case TpuState::stale_lock:
      return fmt::format("{} left by {}; no process holds the TPU{}", kLibtpuLockfile, lock_owner,
                         s.lockfile.owner && s.lockfile.owner->uid == s.caller_uid
                             ? " (yours: blocks others, not you)"
                             : "");
    case TpuState::no_device:
      return "no TPU device file (/dev/accel*, /dev/vfio/N) here: not a TPU VM?";
    case TpuState::partial:
      if (!s.privileged) return "no passwordless sudo: other users' processes are invisible";
      return fmt::format("{} processes could not be inspected", s.denied);
    default: return "";
  }
}

struct Row {
  TpuState state;
  std::string detail;
  std::vector<int> workers;
};

std::vector<Row> group_rows(const std::vector<WorkerScanResult>& results) {
  std::map<std::pair<TpuState, std::string>, std::vector<int>> groups;
  for (const WorkerScanResult& r : results) groups[{r.state, row_detail(r)}].push_back(r.worker.index);
  std::vector<Row> rows;
  for (auto& [key, workers] : groups) rows.push_back({key.first, key.second, workers});
  std::sort(rows.begin(), rows.end(),
            [](const Row& a, const Row& b) { return a.workers.front() < b.workers.front(); });
  return rows;
}

std::string notes(const std::vector<WorkerScanResult>& results) {
  std::vector<int> logs_noise, stale, partial;
  std::set<std::string> logs_owners;
  for (const WorkerScanResult& r : results) {
    if (!r.scan) continue;
    const LockScan& s = *r.scan;
    if (r.state == TpuState::stale_lock) stale.push_back(r.worker.index);
    if (r.state == TpuState::partial) partial.push_back(r.worker.index);
    if (s.tpu_logs && s.tpu_logs->uid != s.caller_uid && r.state != TpuState::busy_other) {
      logs_noise.push_back(r.worker.index);
      logs_owners.insert(s.tpu_logs->user);
    }
  }
  std::string text;
  if (!stale.empty()) {
    text += fmt::format(
        "  {}: a job killed with SIGKILL left its lockfile, which blocks every other user.\n"
        "    `tpurun kill --worker {}` removes it (it checks again that no process holds the TPU).\n",
        compact_worker_set(stale), worker_arg(stale));
  }
  if (!logs_noise.empty()) {
    text += fmt::format(
        "  {}: /tmp/tpu_logs belongs to {}: your jobs will print \"Could not open the log file ... "
        "Permission denied\";\n    harmless noise. `tpurun kill --worker {}` removes it.\n",
        compact_worker_set(logs_noise), fmt::join(logs_owners, ", "), worker_arg(logs_noise));
  }
  if (!partial.empty()) {
    text += fmt::format(
        "  {}: partial view: without passwordless sudo, other users' processes cannot be seen, so the\n"
        "    TPU may be in use. Ask an admin to run `tpurun status`, or get passwordless sudo.\n",
        compact_worker_set(partial));
  }
  return text.empty() ? text : "Notes:\n" + text;
}

}  // namespace

std::string format_state_rows(const std::vector<WorkerScanResult>& results, bool color) {
  std::vector<Row> rows = group_rows(results);
  size_t set_width = 0;
  for (const Row& row : rows) set_width = std::max(set_width, compact_worker_set(row.workers).size());
  std::string text;
  for (const Row& row : rows) {
    std::string line = fmt::format("  {:<{}}  {}", compact_worker_set(row.workers), set_width,
                                   paint_state(row.state, color, row.detail.empty() ? 0 : 11));
    if (!row.detail.empty()) line += "  " + row.detail;
    text += line + "\n";
  }
  return text;
}

std::string format_status_table(const std::string& pod_name, const std::vector<WorkerScanResult>& results,
                                bool color) {
  std::map<TpuState, int> counts;
  for (const WorkerScanResult& r : results) ++counts[r.state];
  std::vector<std::string> count_parts;
  for (const auto& [state, n] : counts) count_parts.push_back(fmt::format("{} {}", n, to_string(state)));
  std::string text =
      fmt::format("{}: {} worker{}: {}\n", pod_name.empty() ? "this host" : pod_name, results.size(),
                  results.size() == 1 ? "" : "s", fmt::join(count_parts, ", "));

  text += format_state_rows(results, color);

  std::string holders;
  for (const WorkerScanResult& r : results) {
    if (!r.scan) continue;
    std::vector<ScannedProcess> others;
    for (const ScannedProcess& p : tpu_users(*r.scan)) {
      if (p.uid != r.scan->caller_uid) others.push_back(p);
    }
    for (const HolderJob& job : holder_jobs(others)) {
      holders += fmt::format("  {:<5} {}\n", r.worker.label(), job_text(job, kCommandWidth));
    }
  }
  if (!holders.empty()) {
    text +=
        fmt::format("Held by other users (WORKER USER PID AGE COMMAND); ask them, or an admin:\n{}", holders);
  }
  text += notes(results);
  return text;
}

}  // namespace tpurun

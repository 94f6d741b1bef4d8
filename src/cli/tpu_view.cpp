#include "cli/tpu_view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "cli/report.hpp"
#include "tpurun/duration.hpp"

namespace tpurun::cli {

std::string truncate_text(std::string_view text, size_t width) {
  size_t points = 0, cut = std::string_view::npos;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;  // continuation byte
    if (points == (width > 3 ? width - 3 : 0)) cut = i;
    if (++points > width) return std::string(text.substr(0, cut)) + "...";
  }
  return std::string(text);
}

std::string short_command(std::string_view command) {
  std::string out;
  size_t i = 0;
  while (i < command.size()) {
    size_t end = command.find(' ', i);
    if (end == std::string_view::npos) end = command.size();
    std::string_view word = command.substr(i, end - i);
    if (word.size() > 1 && word.front() == '/' && word.back() != '/') word = word.substr(word.rfind('/') + 1);
    out.append(word);
    if (end < command.size()) out.push_back(' ');
    i = end + 1;
  }
  return out;
}

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

std::string describe_job(const HolderJob& job, size_t command_width) {
  const ScannedProcess& p = job.leader;
  std::string user = p.user.empty() ? "uid " + std::to_string(p.uid) : p.user;
  std::string line = fmt::format("{:<8} {:>7}  {:>6}  {}", user, p.pid, format_age(p.elapsed_s),
                                 truncate_text(p.command.empty() ? "?" : p.command, command_width));
  if (p.devices.empty()) line += "  (holds the libtpu lock)";
  if (job.others > 0) line += fmt::format("  (+{} in its group)", job.others);
  return line;
}

std::string paint_state(TpuState state, bool color, size_t pad) {
  std::string name = to_string(state);
  std::string padding(name.size() < pad ? pad - name.size() : 0, ' ');
  if (!color) return name + padding;
  const char* code = "";
  switch (state) {
    case TpuState::free: code = "\033[32m"; break;
    case TpuState::busy_self: code = "\033[36m"; break;
    case TpuState::busy_other: code = "\033[1;31m"; break;
    case TpuState::stale_lock:
    case TpuState::partial: code = "\033[33m"; break;
    case TpuState::unreachable:
    case TpuState::error: code = "\033[35m"; break;
  }
  return code + name + "\033[0m" + padding;
}

nlohmann::json process_to_json(const ScannedProcess& p) {
  return {{"pid", p.pid},
          {"user", p.user},
          {"uid", p.uid},
          {"command", p.command},
          {"device", p.devices.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.devices.front())},
          {"devices", p.devices},
          {"elapsed_s", p.elapsed_s},
          {"pgid", p.pgid},
          {"sid", p.sid},
          {"ppid", p.ppid},
          {"run_id", p.run_id ? nlohmann::json(*p.run_id) : nlohmann::json(nullptr)}};
}

nlohmann::json scan_result_to_json(const WorkerScanResult& r) {
  nlohmann::json j = worker_json(r.worker);
  j["state"] = to_string(r.state);
  j["holders"] = nlohmann::json::array();
  j["lockfile"] = nullptr;
  j["tpu_logs_owner"] = nullptr;
  j["privileged"] = nullptr;
  if (r.scan) {
    const LockScan& s = *r.scan;
    for (const ScannedProcess& p : tpu_users(s)) j["holders"].push_back(process_to_json(p));
    j["lockfile"] = {
        {"exists", s.lockfile.exists},
        {"owner", s.lockfile.owner ? nlohmann::json(s.lockfile.owner->user) : nlohmann::json(nullptr)},
        {"held", s.lockfile.held},
        {"holder_pid",
         s.lockfile.holder_pid ? nlohmann::json(*s.lockfile.holder_pid) : nlohmann::json(nullptr)}};
    if (s.tpu_logs) j["tpu_logs_owner"] = s.tpu_logs->user;
    j["privileged"] = s.privileged;
    j["caller"] = s.caller_user;
  }
  j["error"] = r.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.error);
  return j;
}

int tpu_exit_code(const std::vector<TpuState>& states) {
  int code = 0;
  for (TpuState s : states) {
    if (s == TpuState::unreachable || s == TpuState::error) return 255;
    if (!is_free(s)) code = 1;
  }
  return code;
}

}  // namespace tpurun::cli

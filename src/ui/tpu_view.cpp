#include "tpurun/ui/tpu_view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "tpurun/ui/report.hpp"
#include "tpurun/util/duration.hpp"

namespace tpurun {

std::string job_text(const HolderJob& job, size_t command_width) {
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
    case TpuState::no_device:
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

}  // namespace tpurun

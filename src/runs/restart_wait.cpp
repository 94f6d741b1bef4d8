// What a relaunch waits for: every worker reachable, no process of the run's
// user and no one else on its TPU, and for a gcloud pod the TPU VM READY.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "tpurun/config.hpp"
#include "tpurun/supervisor.hpp"
#include "tpurun/tpu_scan.hpp"

namespace tpurun {
namespace {

// "" when the TPU VM is READY; else its state and health, as gcloud says them.
std::string gcloud_blocker(const GcloudSpec& spec, ProcessRunner& processes) {
  ProcessResult r = processes.run(gcloud_describe_argv(spec));
  if (r.exit_code != 0) return fmt::format("`gcloud ... describe {}` failed (exit {})", spec.name, r.exit_code);
  try {
    auto doc = nlohmann::json::parse(r.out);
    std::string state = doc.value("state", "");
    std::string health = doc.value("health", "");
    if (state == "READY" && (health.empty() || health == "HEALTHY")) return "";
    return fmt::format("TPU VM {} is {}{}", spec.name, state.empty() ? "in an unknown state" : state,
                       health.empty() ? "" : " (health " + health + ")");
  } catch (const std::exception&) {
    return fmt::format("cannot read `gcloud ... describe {}` output", spec.name);
  }
}

std::string holder_text(const ScannedProcess& p) {
  return fmt::format("{} pid {} {}", p.user.empty() ? std::to_string(p.uid) : p.user, p.pid,
                     p.command.substr(0, 40));
}

}  // namespace

std::string restart_blockers(const RunRecord& record, const PodConfig& pod, Transport& transport,
                             ProcessRunner& processes, int fanout, const CancelToken& cancel) {
  std::vector<std::string> blockers;
  if (pod.gcloud) {
    std::string why = gcloud_blocker(*pod.gcloud, processes);
    if (!why.empty()) return why;
  }
  for (const Slice& slice : pod.slices) {  // a multi-slice pod: every slice's TPU VM
    if (!slice.gcloud) continue;
    std::string why = gcloud_blocker(*slice.gcloud, processes);
    if (!why.empty()) return why;
  }
  for (const WorkerScanResult& r : scan_workers(record.workers, transport, fanout, cancel, pod.device_globs)) {
    const std::string who = r.worker.display();
    switch (r.state) {
      case TpuState::free:
      case TpuState::stale_lock:
      case TpuState::partial:
        break;
      case TpuState::unreachable:
      case TpuState::error:
        blockers.push_back(fmt::format("{} ({})", who, r.error.empty() ? to_string(r.state) : r.error));
        break;
      case TpuState::busy_self:
      case TpuState::busy_other: {
        std::vector<std::string> holders;
        if (r.scan) {
          for (const ScannedProcess& p : r.scan->holders) holders.push_back(holder_text(p));
        }
        blockers.push_back(fmt::format("{} (TPU held by {})", who, fmt::join(holders, ", ")));
        break;
      }
    }
  }
  if (blockers.empty()) return "";
  return fmt::format("waiting for {}", fmt::join(blockers, "; "));
}

}  // namespace tpurun

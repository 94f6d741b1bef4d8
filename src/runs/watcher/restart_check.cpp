// What a relaunch waits for: for a gcloud pod, its TPU VM READY (described
// again, so a relaunch goes to the workers' current addresses); every worker
// reachable; no process of the run's user and no one else on its TPU.
#include "runs/watcher/restart_check.hpp"
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <optional>

#include "tpurun/pod/config.hpp"
#include "tpurun/pod/tpu_node.hpp"
#include "tpurun/runs/watcher/watcher.hpp"
#include "tpurun/tpu/scan.hpp"

namespace tpurun {
namespace {

std::string holder_text(const ScannedProcess& p) {
  return fmt::format("{} pid {} {}", p.user.empty() ? std::to_string(p.uid) : p.user, p.pid,
                     p.command.substr(0, 40));
}

// A TPU VM that never comes back by itself: it must be deleted and created again.
bool gone_for_good(const std::string& state) {
  return state == "PREEMPTED" || state == "TERMINATED" || state == "NOT_FOUND";
}

// The TPU VM behind `spec`, or why it cannot be used. Fills check.waiting_for
// or check.gone when it is not READY.
std::optional<TpuNode> described(const std::string& pod, const GcloudSpec& spec, ProcessRunner& processes,
                                 RestartCheck& check) {
  try {
    TpuNode node = describe_node(pod, spec, processes);
    if (node.ready() && node.endpoint_error.empty()) return node;
    const std::string what = fmt::format("TPU VM {} is {}", spec.name, node_state_text(node));
    if (gone_for_good(node.state)) {
      check.gone = what;
      check.gone_state = node.state;
      check.gone_node = node;
    } else {
      check.waiting_for = node.endpoint_error.empty() || !node.ready() ? what : node.endpoint_error;
    }
  } catch (const TpuUnavailable& e) {  // deleted
    check.gone = fmt::format("TPU VM {} was not found (deleted)", spec.name);
    check.gone_state = e.node().state;
    check.gone_node = e.node();
  } catch (const std::exception& e) {
    check.waiting_for = e.what();  // gcloud itself failed: try again later
  }
  return std::nullopt;
}

// Where the run's workers are now: worker i of the run is networkEndpoints[i]
// of its (slice's) TPU VM, which may have new addresses after a stop/start.
bool move_workers(RestartCheck& check, const std::string& tpu, const std::vector<Worker>& now,
                  const std::function<bool(const Worker&)>& in_slice, const std::function<int(const Worker&)>& index) {
  for (Worker& w : check.workers) {
    if (!in_slice(w)) continue;
    const int i = index(w);
    if (i < 0 || i >= static_cast<int>(now.size())) {
      check.gone = fmt::format("TPU VM {} now has {} workers; the run had worker {} there", tpu, now.size(), i);
      return false;
    }
    w.host = now[static_cast<size_t>(i)].host;
    w.host_key_alias = now[static_cast<size_t>(i)].host_key_alias;
  }
  return true;
}

}  // namespace

RestartCheck check_tpu_vms(const RunRecord& record, const PodConfig& pod, ProcessRunner& processes) {
  RestartCheck check;
  check.workers = record.workers;
  if (pod.gcloud) {
    auto node = described(pod.name, *pod.gcloud, processes, check);
    if (!node) return check;
    auto all = [](const Worker&) { return true; };
    auto own = [](const Worker& w) { return w.index; };
    if (!move_workers(check, pod.gcloud->name, node->workers, all, own)) return check;
  }
  for (size_t s = 0; s < pod.slices.size(); ++s) {  // a multi-slice pod: every slice's TPU VM
    const Slice& slice = pod.slices[s];
    if (!slice.gcloud) continue;
    auto node = described(slice.pod, *slice.gcloud, processes, check);
    if (!node) return check;
    auto mine = [&](const Worker& w) { return w.slice == static_cast<int>(s); };
    auto within = [](const Worker& w) { return w.slice_worker; };
    if (!move_workers(check, slice.gcloud->name, node->workers, mine, within)) return check;
  }
  return check;
}

RestartCheck check_restart(const RunRecord& record, const PodConfig& pod, Transport& transport,
                           ProcessRunner& processes, int fanout, const CancelToken& cancel) {
  RestartCheck check = check_tpu_vms(record, pod, processes);
  if (!check.ready()) return check;
  std::vector<std::string> blockers;
  for (const WorkerScanResult& r : scan_workers(check.workers, transport, fanout, cancel, pod.device_globs)) {
    const std::string who = r.worker.display();
    switch (r.state) {
      case TpuState::free:
      case TpuState::stale_lock:
      case TpuState::partial:
      case TpuState::no_device:
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
  if (!blockers.empty()) check.waiting_for = fmt::format("waiting for {}", fmt::join(blockers, "; "));
  return check;
}

}  // namespace tpurun

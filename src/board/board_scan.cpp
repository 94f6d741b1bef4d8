// BoardScanner: every pod's workers scanned at once, one thread per pod, each
// with its own SSH settings and fan-out, so a slow pod holds back nobody.
#include "tpurun/board/board_scan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <thread>

#include "board/board_gcloud.hpp"
#include "tpurun/board/claim_check.hpp"
#include "tpurun/pod/placement.hpp"
#include "tpurun/pod/tpu_node.hpp"
#include "tpurun/transport/kept_connections.hpp"

namespace tpurun {

struct BoardScanner::Pod {
  std::string name;
  std::string accelerator;
  std::string gcloud_state;
  std::string gcloud_health;  // " (health ...)" when gcloud says more than the state
  bool listed = false;  // by board.gcloud: loaded once, not from the config
  std::optional<GcloudSpec> gcloud;  // a config pod's TPU VM, where `up` made it
  PodConfig config;
  std::unique_ptr<Transport> transport;  // null: could not be loaded (or not READY)
  std::string error;
};

BoardScanner::BoardScanner(Context& ctx, int fanout, bool keep_connections)
    : ctx_(ctx), fanout_(fanout), keep_(keep_connections) {
  ConfigFile config = load_board_config(ctx);
  for (const auto& [name, pod_config] : config.pods) {
    if (!pod_config.slices.empty()) continue;  // a multi-slice pod: its slices have their own lines
    pods_.push_back(std::make_unique<Pod>());
    pods_.back()->name = name;
    PodConfig placed = pod_config;
    apply_placement(placed, ctx.env);
    pods_.back()->gcloud = placed.gcloud;
    load(*pods_.back());
  }
  for (ListedTpu& tpu : list_board_tpus(config, ctx.processes)) {
    auto pod = std::make_unique<Pod>();
    pod->name = tpu.name;
    pod->accelerator = tpu.accelerator;
    pod->gcloud_state = tpu.state;
    pod->listed = true;
    pod->error = tpu.error;
    if (tpu.pod) {
      pod->config = std::move(*tpu.pod);
      attach_transport(*pod);
    }
    pods_.push_back(std::move(pod));
  }
  for (const auto& pod : pods_) {
    names_.push_back(pod->name);
    width_ = std::max(width_, pod->name.size() + (pod->accelerator.empty() ? 0 : pod->accelerator.size() + 3));
  }
}

BoardScanner::~BoardScanner() = default;

void BoardScanner::load(Pod& pod) {
  PodRequest request = ctx_.pod_request;
  request.pod = pod.name;
  request.describe_fresh = true;  // the board shows each TPU VM's state as gcloud says it now
  try {
    pod.config = load_pod(request, ctx_.env, ctx_.processes);
    attach_transport(pod);
    pod.gcloud_state.clear();
    pod.gcloud_health.clear();
  } catch (const TpuUnavailable& e) {
    // Not an error of the board: the pod is down, and gcloud says how.
    pod.transport.reset();
    pod.error.clear();
    pod.gcloud_state = e.node().state;
    pod.gcloud_health = node_state_text(e.node()).substr(e.node().state.size());
    if (pod.gcloud) {  // no VM, or one not READY yet: its queued resource says more
      const CloudState cloud = board_cloud_state(*pod.gcloud, e.node().state, ctx_.processes, WallClock::now());
      if (!cloud.state.empty()) {
        pod.gcloud_state = cloud.state;
        pod.gcloud_health = cloud.detail;
      }
    }
  } catch (const std::exception& e) {
    pod.transport.reset();
    pod.error = e.what();
  }
}

void BoardScanner::attach_transport(Pod& pod) {
  pod.transport = ctx_.make_transport(pod.config);
  if (keep_) pod.transport = std::make_unique<KeptConnections>(std::move(pod.transport));
  pod.error.clear();
}

std::vector<BoardEntry> BoardScanner::scan(const CancelToken& cancel, WallClock::time_point now,
                                           const OnEntry& on_entry) {
  std::vector<BoardEntry> entries(pods_.size());
  std::mutex mu;
  auto answer = [&](size_t i) {
    std::lock_guard lock(mu);
    if (on_entry) on_entry(i, entries[i]);
  };
  std::vector<std::thread> threads;
  for (size_t i = 0; i < pods_.size(); ++i) {
    Pod& pod = *pods_[i];
    entries[i].pod = pod.name;
    entries[i].accelerator = pod.accelerator;
    entries[i].gcloud_state = pod.gcloud_state;
    entries[i].gcloud_health = pod.gcloud_health;
    if (!pod.transport && !pod.listed && scans_ > 0) load(pod);  // gcloud may answer this time
    if (!pod.transport) {  // a listed TPU VM that is not READY has no workers to scan
      entries[i].state = pod.error.empty() ? "unreachable" : "error";
      entries[i].error = pod.error;
      answer(i);
      continue;
    }
    threads.emplace_back([&, i] {
      BoardEntry& e = entries[i];
      const PodConfig& config = pods_[i]->config;
      try {
        if (!config.logs_root.empty()) e.claim = Board(config.logs_root).holder(e.pod, now, &e.warnings);
      } catch (const std::exception& ex) {
        e.warnings.push_back(fmt::format("claims of pod '{}': {}", e.pod, ex.what()));
      }
      e.workers = scan_workers(config.workers, *pods_[i]->transport, fanout_, cancel, config.device_globs);
      e.state = pod_state(e.workers);
      e.holders = pod_holders(e.workers);
      // A run's idle time, from its watcher's mark on the board.
      for (BoardHolder& h : e.holders) {
        if (h.run_id && !config.logs_root.empty()) {
          try {
            h.idle_since = Board(config.logs_root).idle_since(*h.run_id, h.user);
          } catch (const std::exception&) {  // an unsafe board was reported with the claims
          }
        }
      }
      answer(i);
    });
  }
  for (std::thread& t : threads) t.join();
  ++scans_;
  return entries;
}

}  // namespace tpurun

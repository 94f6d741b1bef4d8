#include "tpurun/board/pod_pick.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fnmatch.h>

#include <thread>

#include "tpurun/board/board_entry.hpp"
#include "tpurun/board/claim_check.hpp"
#include "tpurun/fanout/gather.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/util/duration.hpp"

namespace tpurun {
namespace {

// Why `pod` cannot be used ("" when it can): claimed, busy, unreachable, ...
std::string skip_reason(const std::string& name, bool ignore_claim, Context& ctx) {
  PodRequest request = ctx.pod_request;
  request.pod = name;
  PodConfig pod;
  try {
    pod = load_pod(request, ctx.env, ctx.processes);
  } catch (const std::exception& e) {
    return fmt::format("error: {}", e.what());
  }
  const auto now = WallClock::now();
  if (!pod.logs_root.empty() && !ignore_claim) {
    try {
      auto held = Board(pod.logs_root).holder(pod.name, now);
      if (held && held->user != claim_user()) return "claimed by " + claim_text(*held, now);
    } catch (const std::exception& e) {
      fmt::print(ctx.err, "tpurun: warning: claims of pod '{}': {}\n", name, e.what());
    }
  }
  auto transport = ctx.make_transport(pod);
  auto workers = scan_workers(pod.workers, *transport, 64, ctx.cancel, pod.device_globs);
  const std::string state = pod_state(workers);
  if (state == "free") return "";
  std::vector<std::string> holders;
  for (const BoardHolder& h : pod_holders(workers)) {
    holders.push_back(fmt::format("{} ({} on {})", h.user, h.command, compact_worker_set(h.workers)));
  }
  std::vector<int> down;
  for (const WorkerScanResult& r : workers) {
    if (r.state == TpuState::unreachable || r.state == TpuState::error) down.push_back(r.worker.index);
  }
  std::string detail = !holders.empty() ? fmt::format("by {}", fmt::join(holders, ", "))
                       : !down.empty()  ? fmt::format("{} not answering", compact_worker_set(down))
                                        : "";
  return detail.empty() ? state : state + " " + detail;
}

}  // namespace

bool is_pod_pattern(const std::string& pod) {
  return pod == "auto" || pod.find_first_of("*?[") != std::string::npos;
}

namespace {

struct Pick {
  std::optional<std::string> pod;
  std::vector<std::string> skipped;  // "name: why", in config order
};

Pick pick_once(const std::string& pattern, const ConfigFile& config, bool ignore_claim, Context& ctx) {
  Pick pick;
  bool matched = false;
  for (const std::string& name : config.order) {
    if (pattern != "auto" && ::fnmatch(pattern.c_str(), name.c_str(), 0) != 0) continue;
    if (!config.pods.at(name).slices.empty()) continue;  // a multi-slice run is asked for by name
    matched = true;
    if (ctx.cancel.cancelled()) throw Interrupted("interrupted while looking for a free pod");
    std::string reason = skip_reason(name, ignore_claim, ctx);
    if (reason.empty()) {
      pick.pod = name;
      return pick;
    }
    pick.skipped.push_back(fmt::format("{}: {}", name, reason));
  }
  if (!matched) {
    throw UsageError(fmt::format("--pod {}: no pod in {} matches; pods: {}", pattern, config.path,
                                 fmt::join(config.order, ", ")));
  }
  return pick;
}

void sleep_unless_cancelled(std::chrono::milliseconds span, const CancelToken& cancel) {
  const auto until = std::chrono::steady_clock::now() + span;
  while (std::chrono::steady_clock::now() < until) {
    if (cancel.cancelled()) throw Interrupted("interrupted while waiting for a free pod");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

void pick_pod(Context& ctx, bool ignore_claim, std::optional<std::chrono::milliseconds> wait_every,
              bool one_pod_may_wait) {
  std::string pattern = ctx.pod_request.pod.value_or(ctx.env.get("TPURUN_POD").value_or(""));
  if (!is_pod_pattern(pattern)) {
    if (wait_every && !one_pod_may_wait) {
      throw UsageError("--wait waits for a free pod among several: use it with --pod auto or --pod 'glob*'");
    }
    return;
  }
  ConfigFile config = load_board_config(ctx);
  std::vector<std::string> told;  // what the last "waiting" note said
  for (;;) {
    Pick pick = pick_once(pattern, config, ignore_claim, ctx);
    if (pick.pod) {
      fmt::print(ctx.err, "tpurun: --pod {}: picked '{}' (free on every worker{}){}\n", pattern, *pick.pod,
                 ignore_claim ? "" : ", not claimed", pick.skipped.empty() ? "" : "; skipped:");
      for (const std::string& s : pick.skipped) fmt::print(ctx.err, "  {}\n", s);
      ctx.pod_request.pod = *pick.pod;
      return;
    }
    if (!wait_every) {
      throw std::runtime_error(
          fmt::format("--pod {}: no pod is free:\n  {}\n(--wait waits for one)", pattern, fmt::join(pick.skipped, "\n  ")));
    }
    if (pick.skipped != told) {
      fmt::print(ctx.err, "tpurun: --pod {}: no pod is free; waiting for one (checking every {}s, Ctrl-C stops):\n  {}\n",
                 pattern, std::chrono::duration_cast<std::chrono::seconds>(*wait_every).count(),
                 fmt::join(pick.skipped, "\n  "));
      told = pick.skipped;
    }
    std::fflush(ctx.err);
    sleep_unless_cancelled(*wait_every, ctx.cancel);
  }
}

std::optional<std::chrono::milliseconds> parse_pod_wait(const std::optional<std::string>& text, bool dry_run) {
  if (!text) return std::nullopt;
  if (dry_run) return std::nullopt;  // a dry run says what it would do now
  if (text->empty()) return std::chrono::seconds(30);
  std::chrono::milliseconds every{0};
  try {
    every = parse_duration(*text);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("--wait {}: {}; give how often to look again, e.g. --wait 30 (seconds), --wait 1m",
                                 *text, e.what()));
  }
  if (every < std::chrono::seconds(1)) {
    throw UsageError(fmt::format("--wait {}: at least 1s between scans, e.g. --wait 30", *text));
  }
  return every;
}

}  // namespace tpurun

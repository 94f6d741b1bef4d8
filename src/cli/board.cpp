// tpurun status --all: every pod's workers scanned at once (one thread per
// pod, each pod's own SSH settings and fan-out), a line per pod as it answers.
#include "cli/board.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <mutex>
#include <thread>

#include "cli/claim_check.hpp"
#include "cli/report.hpp"
#include "cli/tpu_view.hpp"
#include "tpurun/duration.hpp"
#include "tpurun/gather.hpp"
#include "tpurun/worker_select.hpp"

namespace tpurun::cli {
namespace {

bool held(TpuState s) { return s == TpuState::busy_self || s == TpuState::busy_other || s == TpuState::stale_lock; }

nlohmann::json claim_json(const std::optional<Claim>& c, WallClock::time_point now) {
  if (!c) return nullptr;
  return {{"user", c->user},
          {"note", c->note},
          {"host", c->host},
          {"created_at", format_utc(c->created_at)},
          {"expires_at", format_utc(c->expires_at)},
          {"seconds_left", std::chrono::duration_cast<std::chrono::seconds>(c->expires_at - now).count()}};
}

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
        out.push_back({p.user, p.elapsed_s, command, p.run_id, {r.worker.index}});
      } else {
        same->elapsed_s = std::max(same->elapsed_s, p.elapsed_s);
        same->workers.push_back(r.worker.index);
      }
    }
  }
  return out;
}

std::string format_board_line(const BoardEntry& e, WallClock::time_point now, size_t name_width) {
  std::string line = fmt::format("{:<{}}  {:<13}", e.pod, name_width, e.state);
  std::vector<std::string> parts;
  for (const BoardHolder& h : e.holders) {
    parts.push_back(fmt::format("{}: {}{} on {}, {}", h.user, truncate_text(h.command, 40),
                                h.run_id ? " [run " + *h.run_id + "]" : "", compact_worker_set(h.workers),
                                format_age(h.elapsed_s)));
  }
  if (!e.error.empty()) parts.push_back(e.error);
  if (e.holders.empty() && e.error.empty()) {
    std::vector<int> down;
    for (const WorkerScanResult& r : e.workers) {
      if (r.state == TpuState::unreachable) down.push_back(r.worker.index);
    }
    if (!down.empty()) parts.push_back(fmt::format("{} unreachable", compact_worker_set(down)));
  }
  line += fmt::format("{}", fmt::join(parts, "; "));
  if (e.claim) line += fmt::format("{}claimed by {}", parts.empty() ? "" : "  ", describe_claim(*e.claim, now));
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

nlohmann::json board_entry_to_json(const BoardEntry& e, WallClock::time_point now) {
  nlohmann::json holders = nlohmann::json::array();
  for (const BoardHolder& h : e.holders) {
    holders.push_back({{"user", h.user},
                       {"since", format_utc(now - std::chrono::seconds(h.elapsed_s))},
                       {"command", h.command},
                       {"run_id", h.run_id ? nlohmann::json(*h.run_id) : nlohmann::json(nullptr)},
                       {"workers", h.workers}});
  }
  nlohmann::json workers = nlohmann::json::array();
  for (const WorkerScanResult& r : e.workers) workers.push_back(scan_result_to_json(r));
  return {{"pod", e.pod},
          {"state", e.state},
          {"holders", holders},
          {"claim", claim_json(e.claim, now)},
          {"workers", workers},
          {"error", e.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.error)}};
}

int run_status_all(const StatusOptions& o, Context& ctx) {
  if (o.target.workers != "all") throw UsageError("--all scans every worker of every pod: drop --worker");
  ConfigFile config = load_board_config(ctx);
  std::vector<BoardEntry> entries;
  std::vector<PodConfig> pods;
  std::vector<std::unique_ptr<Transport>> transports;
  size_t width = 0;
  for (const auto& [name, _] : config.pods) {  // loaded one by one: gcloud lookups and transports are not threaded
    BoardEntry entry;
    entry.pod = name;
    width = std::max(width, name.size());
    PodRequest request = ctx.pod_request;
    request.pod = name;
    PodConfig pod;
    try {
      pod = load_pod(request, ctx.env, ctx.processes);
      transports.push_back(ctx.make_transport(pod));
    } catch (const std::exception& e) {
      entry.state = "error";
      entry.error = e.what();
      transports.push_back(nullptr);
    }
    entries.push_back(std::move(entry));
    pods.push_back(std::move(pod));
  }
  const auto now = WallClock::now();
  std::mutex mu;
  auto report = [&](const BoardEntry& e) {
    std::lock_guard lock(mu);
    if (o.json) return;
    fmt::print(ctx.out, "{}\n", format_board_line(e, now, width));
    std::fflush(ctx.out);
  };
  std::vector<std::thread> threads;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!transports[i]) {
      report(entries[i]);
      continue;
    }
    threads.emplace_back([&, i] {
      BoardEntry& e = entries[i];
      std::vector<std::string> warnings;
      try {
        if (!pods[i].logs_root.empty()) e.claim = Board(pods[i].logs_root).holder(e.pod, now, &warnings);
      } catch (const std::exception& ex) {
        warnings.push_back(fmt::format("claims of pod '{}': {}", e.pod, ex.what()));
      }
      e.workers = scan_workers(pods[i].workers, *transports[i], o.target.fanout, ctx.cancel, pods[i].device_globs);
      e.state = pod_state(e.workers);
      e.holders = pod_holders(e.workers);
      std::lock_guard lock(mu);
      for (const std::string& w : warnings) fmt::print(ctx.err, "tpurun: warning: {}\n", w);
      if (!o.json) fmt::print(ctx.out, "{}\n", format_board_line(e, now, width));
      std::fflush(ctx.out);
    });
  }
  for (std::thread& t : threads) t.join();
  if (o.json) {
    nlohmann::json doc{{"pods", nlohmann::json::array()}};
    for (const BoardEntry& e : entries) doc["pods"].push_back(board_entry_to_json(e, now));
    print_json(ctx.out, doc);
  }
  if (ctx.cancel.cancelled()) return 130;
  bool any_error = std::any_of(entries.begin(), entries.end(), [](const BoardEntry& e) { return e.state == "error"; });
  return any_error ? 1 : 0;
}

}  // namespace tpurun::cli

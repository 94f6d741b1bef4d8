// tpurun status --all: a pod's state from its workers' verdicts, its line and
// its JSON record; every pod's line printed as the pod answers (board_scan.cpp).
#include "cli/board.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "cli/board_scan.hpp"
#include "cli/board_watch.hpp"
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

std::string board_label(const BoardEntry& e) {
  return e.accelerator.empty() ? e.pod : fmt::format("{} ({})", e.pod, e.accelerator);
}

std::string format_board_line(const BoardEntry& e, WallClock::time_point now, size_t name_width) {
  std::string line = fmt::format("{:<{}}  {:<13}", board_label(e), name_width, e.state);
  std::vector<std::string> parts;
  if (!e.gcloud_state.empty() && e.gcloud_state != "READY") parts.push_back("gcloud: " + e.gcloud_state);
  for (const BoardHolder& h : e.holders) {
    parts.push_back(fmt::format("{}: {}{} on {}, {}", h.user, truncate_text(h.command, 40),
                                h.run_id ? " [run " + *h.run_id + "]" : "", compact_worker_set(h.workers),
                                format_age(h.elapsed_s)));
  }
  if (!e.error.empty()) {  // one line per pod: gcloud's stderr comes after a newline
    std::string error = e.error;
    std::replace(error.begin(), error.end(), '\n', ' ');
    parts.push_back(error);
  }
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
  auto text_or_null = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  return {{"pod", e.pod},
          {"accelerator_type", text_or_null(e.accelerator)},
          {"gcloud_state", text_or_null(e.gcloud_state)},
          {"state", e.state},
          {"holders", holders},
          {"claim", claim_json(e.claim, now)},
          {"workers", workers},
          {"error", text_or_null(e.error)}};
}

nlohmann::json board_to_json(const std::vector<BoardEntry>& entries, WallClock::time_point now) {
  nlohmann::json doc{{"pods", nlohmann::json::array()}};
  for (const BoardEntry& e : entries) doc["pods"].push_back(board_entry_to_json(e, now));
  return doc;
}

int board_exit_code(const std::vector<BoardEntry>& entries, const CancelToken& cancel) {
  if (cancel.cancelled()) return 130;
  bool any_error = std::any_of(entries.begin(), entries.end(), [](const BoardEntry& e) { return e.state == "error"; });
  return any_error ? 1 : 0;
}

int run_status_all(const StatusOptions& o, Context& ctx) {
  if (o.target.workers != "all") throw UsageError("--all scans every worker of every pod: drop --worker");
  if (o.watch) return run_board_watch(o, ctx);
  BoardScanner scanner(ctx, o.target.fanout, false);
  const auto now = WallClock::now();
  auto entries = scanner.scan(ctx.cancel, now, [&](size_t, const BoardEntry& e) {
    for (const std::string& w : e.warnings) fmt::print(ctx.err, "tpurun: warning: {}\n", w);
    if (!o.json) fmt::print(ctx.out, "{}\n", format_board_line(e, now, scanner.name_width()));
    std::fflush(ctx.out);
  });
  if (o.json) print_json(ctx.out, board_to_json(entries, now));
  return board_exit_code(entries, ctx.cancel);
}

}  // namespace tpurun::cli

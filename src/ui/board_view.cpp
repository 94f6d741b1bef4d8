// How the board shows a pod: its line in `status --all` and its JSON record.
#include "tpurun/ui/board_view.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "tpurun/board/claim_check.hpp"
#include "tpurun/fanout/gather.hpp"
#include "tpurun/ui/tpu_view.hpp"
#include "tpurun/util/duration.hpp"

namespace tpurun {
namespace {

nlohmann::json claim_json(const std::optional<Claim>& c, WallClock::time_point now) {
  if (!c) return nullptr;
  return {{"user", c->user},
          {"note", c->note},
          {"host", c->host},
          {"created_at", format_utc_time(c->created_at)},
          {"expires_at", format_utc_time(c->expires_at)},
          {"seconds_left", std::chrono::duration_cast<std::chrono::seconds>(c->expires_at - now).count()}};
}

}  // namespace

std::string board_label(const BoardEntry& e) {
  return e.accelerator.empty() ? e.pod : fmt::format("{} ({})", e.pod, e.accelerator);
}

std::string format_board_line(const BoardEntry& e, WallClock::time_point now, size_t name_width) {
  std::string line = fmt::format("{:<{}}  {:<13}", board_label(e), name_width, e.state);
  std::vector<std::string> parts;
  if (!e.gcloud_state.empty() && e.gcloud_state != "READY") parts.push_back("gcloud: " + e.gcloud_state + e.gcloud_health);
  for (const BoardHolder& h : e.holders) {
    std::string idle;
    if (h.idle_since) {
      idle = ", idle " + format_age(std::max<long>(
                             0, std::chrono::duration_cast<std::chrono::seconds>(now - *h.idle_since).count()));
    }
    parts.push_back(fmt::format("{}: {}{} on {}, {}{}", h.user, truncate_text(h.command, 40),
                                h.run_id ? " [run " + *h.run_id + "]" : "", compact_worker_set(h.workers),
                                format_age(h.elapsed_s), idle));
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
  if (e.claim) line += fmt::format("{}claimed by {}", parts.empty() ? "" : "  ", claim_text(*e.claim, now));
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

nlohmann::json board_entry_to_json(const BoardEntry& e, WallClock::time_point now) {
  nlohmann::json holders = nlohmann::json::array();
  for (const BoardHolder& h : e.holders) {
    holders.push_back({{"user", h.user},
                       {"since", format_utc_time(now - std::chrono::seconds(h.elapsed_s))},
                       {"command", h.command},
                       {"run_id", h.run_id ? nlohmann::json(*h.run_id) : nlohmann::json(nullptr)},
                       {"workers", h.workers},
                       {"idle_since", h.idle_since ? nlohmann::json(format_utc_time(*h.idle_since)) : nlohmann::json(nullptr)}});
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

nlohmann::json live_claim_to_json(const Claim& claim, WallClock::time_point now) {
  nlohmann::json record = claim_json(claim, now);
  record["pod"] = claim.pod;
  record["file"] = claim.file;
  return record;
}

}  // namespace tpurun

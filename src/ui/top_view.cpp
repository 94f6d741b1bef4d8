#include "tpurun/ui/top_view.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "tpurun/tpu/holders.hpp"
#include "tpurun/ui/report.hpp"
#include "tpurun/ui/tpu_view.hpp"
#include "tpurun/util/text.hpp"

namespace tpurun {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr size_t kHolderWidth = 56;

std::string gib(int64_t bytes) { return fmt::format("{:.1f}", static_cast<double>(bytes) / kGiB); }

std::string hbm_text(const ChipFigures& c) {
  if (!c.hbm_used_bytes && !c.hbm_total_bytes) return "-";
  return fmt::format("{}/{} GiB", c.hbm_used_bytes ? gib(*c.hbm_used_bytes) : "?",
                     c.hbm_total_bytes ? gib(*c.hbm_total_bytes) : "?");
}

std::string duty_text(const ChipFigures& c) {
  return c.duty_cycle_pct ? fmt::format("{:.1f}%", *c.duty_cycle_pct) : "-";
}

// "alice 4242 [run 261124-...] python3 train.py --forever; bob 77 ..." for the
// worker's TPU holders, or its state when nobody visible holds it.
std::string holders_text(const WorkerScanResult& r) {
  if (!r.scan) return "";
  std::vector<std::string> parts;
  for (const HolderJob& job : holder_jobs(tpu_users(*r.scan))) {
    const ScannedProcess& p = job.leader;
    std::string part = fmt::format("{} {}", p.user.empty() ? "uid " + std::to_string(p.uid) : p.user, p.pid);
    if (p.run_id) part += " [run " + *p.run_id + "]";
    part += " " + short_command(p.command.empty() ? "?" : p.command);
    if (std::find(parts.begin(), parts.end(), part) == parts.end()) parts.push_back(part);
  }
  if (parts.empty()) return to_string(r.state);
  return truncate_text(fmt::format("{}", fmt::join(parts, "; ")), kHolderWidth);
}

std::string row(const std::string& worker, const std::string& chip, const std::string& duty,
                const std::string& hbm, const std::string& holder) {
  std::string line = fmt::format("{:<6} {:>4}  {:>6}  {:<17}  {}", worker, chip, duty, hbm, holder);
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

// For a row without chips: why there are no figures.
std::string no_figures(const WorkerLook& look) {
  if (!look.metrics) return look.scan.state == TpuState::unreachable ? "unreachable: " + look.scan.error : look.scan.error;
  if (std::holds_alternative<NoTpuWorkload>(*look.metrics)) return "no TPU workload";
  if (const auto* failure = std::get_if<MetricsFailure>(&*look.metrics)) return "error: " + failure->message;
  return "";
}

nlohmann::json chip_json(const ChipFigures& c) {
  auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"device_id", c.device_id},
          {"duty_cycle_pct", opt(c.duty_cycle_pct)},
          {"hbm_used_bytes", opt(c.hbm_used_bytes)},
          {"hbm_total_bytes", opt(c.hbm_total_bytes)}};
}

}  // namespace

std::string format_top_summary(const std::string& pod, const TopSummary& s) {
  std::string duty = "duty cycle -";
  if (s.duty_mean && s.duty_min) {
    duty = fmt::format("duty cycle mean {:.1f}%, min {:.1f}%", *s.duty_mean, *s.duty_min);
    if (s.least_busy) duty += fmt::format(" on w{} ({})", s.least_busy->index, s.least_busy->host);
  }
  std::string line = fmt::format("{}: {} · HBM {} of {} GiB · {} of {} workers with a TPU workload", pod, duty,
                                 gib(s.hbm_used_bytes), gib(s.hbm_total_bytes), s.with_figures, s.workers);
  if (s.failed > 0) line += fmt::format(" · {} failed", s.failed);
  return line;
}

std::vector<std::string> format_top_rows(const std::vector<WorkerLook>& looks) {
  std::vector<std::string> rows{row("WORKER", "CHIP", "DUTY", "HBM USED/TOTAL", "HOLDER")};
  for (const WorkerLook& look : looks) {
    const std::string worker = "w" + std::to_string(look.scan.worker.index);
    const std::string holder = holders_text(look.scan);
    const auto* figures = look.metrics ? std::get_if<TpuFigures>(&*look.metrics) : nullptr;
    if (figures == nullptr || figures->chips.empty()) {
      std::string why = figures != nullptr ? "the service sent no chips" : no_figures(look);
      rows.push_back(row(worker, "-", "", truncate_text(why, 60), look.scan.scan ? holder : ""));
      continue;
    }
    bool first = true;
    for (const ChipFigures& chip : figures->chips) {
      rows.push_back(row(first ? worker : "", std::to_string(chip.device_id), duty_text(chip), hbm_text(chip),
                         first ? holder : ""));
      first = false;
    }
    for (const std::string& note : figures->notes) rows.push_back(row("", "", "", "", "note: " + note));
  }
  return rows;
}

std::string format_top(const std::string& pod, const std::vector<WorkerLook>& looks) {
  std::string text = format_top_summary(pod, summarize_top(looks)) + "\n\n";
  for (const std::string& line : format_top_rows(looks)) text += line + "\n";
  return text;
}

nlohmann::json top_to_json(const std::string& pod, const std::vector<WorkerLook>& looks) {
  const TopSummary s = summarize_top(looks);
  auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json doc{{"pod", pod},
                     {"summary",
                      {{"workers", s.workers},
                       {"with_figures", s.with_figures},
                       {"no_workload", s.no_workload},
                       {"failed", s.failed},
                       {"chips", s.chips},
                       {"duty_cycle_mean_pct", opt(s.duty_mean)},
                       {"duty_cycle_min_pct", opt(s.duty_min)},
                       {"least_busy_worker", s.least_busy ? nlohmann::json(s.least_busy->index) : nlohmann::json(nullptr)},
                       {"hbm_used_bytes", s.hbm_used_bytes},
                       {"hbm_total_bytes", s.hbm_total_bytes}}},
                     {"workers", nlohmann::json::array()}};
  for (const WorkerLook& look : looks) {
    nlohmann::json w = worker_json(look.scan.worker);
    w["state"] = to_string(look.scan.state);
    w["holders"] = nlohmann::json::array();
    if (look.scan.scan) {
      for (const ScannedProcess& p : tpu_users(*look.scan.scan)) w["holders"].push_back(process_to_json(p));
    }
    w["chips"] = nlohmann::json::array();
    w["notes"] = nlohmann::json::array();
    w["error"] = look.scan.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(look.scan.error);
    if (!look.metrics) {
      w["metrics"] = nullptr;
    } else if (const auto* f = std::get_if<TpuFigures>(&*look.metrics)) {
      w["metrics"] = "figures";
      for (const ChipFigures& c : f->chips) w["chips"].push_back(chip_json(c));
      w["notes"] = f->notes;
    } else if (std::holds_alternative<NoTpuWorkload>(*look.metrics)) {
      w["metrics"] = "no_workload";
    } else {
      const auto& e = std::get<MetricsFailure>(*look.metrics);
      w["metrics"] = "error";
      w["metrics_error"] = {{"message", e.message},
                            {"grpc_status", e.grpc ? nlohmann::json(grpc_code_name(*e.grpc)) : nlohmann::json(nullptr)}};
    }
    doc["workers"].push_back(w);
  }
  return doc;
}

}  // namespace tpurun

#include "tpurun/ui/report.hpp"

#include <cmath>
#include <fmt/format.h>

namespace tpurun {

nlohmann::json worker_json(const Worker& worker) {
  nlohmann::json j{{"worker", worker.index}, {"host", worker.host}};
  if (worker.slice >= 0) j.update({{"slice", worker.slice}, {"slice_worker", worker.slice_worker}});
  return j;
}

nlohmann::json outcome_to_json(const WorkerOutcome& o) {
  nlohmann::json j = worker_json(o.worker);
  if (const CommandExit* e = o.exit()) {
    j["exit_code"] = e->code;
    j["signal"] = e->signal ? nlohmann::json(*e->signal) : nlohmann::json(nullptr);
    j["error"] = nullptr;
  } else {
    j["exit_code"] = nullptr;
    j["signal"] = nullptr;
    j["error"] = {{"kind", to_string(o.error()->kind)}, {"message", o.error()->message}};
  }
  j["stdout"] = o.out;
  j["stderr"] = o.err;
  j["duration_s"] = std::round(o.duration_s * 1000) / 1000;
  return j;
}

void print_failure_summary(LinePrinter& printer, const std::vector<WorkerOutcome>& outcomes) {
  auto lines = failure_summary(outcomes);
  if (lines.empty()) return;
  size_t failed = lines.size();
  printer.note(fmt::format("{} of {} workers failed:", failed, outcomes.size()));
  for (const std::string& line : lines) printer.note("  " + line);
}

void print_json(std::FILE* out, const nlohmann::json& doc) {
  std::string text = doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  text.push_back('\n');
  std::fwrite(text.data(), 1, text.size(), out);
  std::fflush(out);
}

}  // namespace tpurun

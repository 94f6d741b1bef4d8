// tpurun profile's lines and JSON (profile_view.hpp).
#include "tpurun/ui/profile_view.hpp"

#include <fmt/format.h>

#include "tpurun/ui/report.hpp"
#include "tpurun/util/duration.hpp"

namespace tpurun {
namespace {

const char* outcome_name(const ProfileOutcome& outcome) {
  switch (outcome.index()) {
    case 0: return "written";
    case 1: return "no_server";
    case 2: return "not_this_run";
    case 3: return "failed";
    default: return "timed_out";
  }
}

std::string why_not(const ProfileOutcome& outcome, int port) {
  if (const auto* none = std::get_if<NoProfilerServer>(&outcome)) {
    return fmt::format("no profiler server on port {}{}: the job must start one, e.g. with {}", port,
                       none->detail.empty() ? "" : " (" + none->detail + ")", fmt::format(kStartServerLine, port));
  }
  if (const auto* other = std::get_if<NotThisRunsServer>(&outcome)) {
    return fmt::format("not asked: port {} is served by {}, not by this run's job", port, other->owner);
  }
  if (const auto* failed = std::get_if<ProfileFailed>(&outcome)) {
    if (failed->transport && *failed->transport != ErrorKind::refused && !failed->grpc) {
      return "unreachable: " + failed->message;
    }
    return "the call failed: " + failed->message;
  }
  if (const auto* late = std::get_if<ProfileTimedOut>(&outcome)) {
    return fmt::format("timed out: no answer after {}", format_duration_ms(late->waited_ms));
  }
  return "";
}

}  // namespace

std::string format_profile_line(const WorkerProfile& p, int port) {
  const std::string who = p.worker.display();
  if (const auto* t = std::get_if<TraceWritten>(&p.outcome)) {
    const std::string size = t->bytes ? human_size(*t->bytes) : "size unknown";
    std::string line = fmt::format("{}  trace written, {}{}: {}", who, size, t->empty_trace ? " (no events)" : "",
                                   t->path);
    if (!t->bytes && !t->note.empty()) line += " (" + t->note + ")";
    return line;
  }
  return who + "  " + why_not(p.outcome, port);
}

std::string format_profile_report(const ProfileReport& r) {
  std::string text;
  int written = 0;
  for (const WorkerProfile& p : r.workers) {
    text += format_profile_line(p, r.port) + "\n";
    if (std::holds_alternative<TraceWritten>(p.outcome)) ++written;
  }
  text += fmt::format("{} of {} workers traced ({} each) into session {} of run {}: {}/{}\n", written,
                      r.workers.size(), format_duration_ms(static_cast<long long>(r.settings.duration_ms)),
                      r.settings.session_id, r.run_id, r.settings.repository_root, r.settings.session_id);
  if (written > 0) text += fmt::format("see it: tpurun tensorboard {}  (the Profile tab)\n", r.run_id);
  return text;
}

nlohmann::json profile_report_to_json(const ProfileReport& r) {
  nlohmann::json doc{{"run_id", r.run_id},
                     {"session_id", r.settings.session_id},
                     {"repository_root", r.settings.repository_root},
                     {"start_timestamp_ns", r.settings.start_timestamp_ns},
                     {"duration_ms", r.settings.duration_ms},
                     {"port", r.port},
                     {"workers", nlohmann::json::array()}};
  for (const WorkerProfile& p : r.workers) {
    nlohmann::json w = worker_json(p.worker);
    w["host_name"] = p.host_name;
    w["outcome"] = outcome_name(p.outcome);
    if (const auto* t = std::get_if<TraceWritten>(&p.outcome)) {
      w["path"] = t->path;
      w["bytes"] = t->bytes ? nlohmann::json(*t->bytes) : nlohmann::json(nullptr);
      w["empty_trace"] = t->empty_trace;
      if (!t->note.empty()) w["message"] = t->note;
    } else {
      w["message"] = why_not(p.outcome, r.port);
    }
    doc["workers"].push_back(std::move(w));
  }
  return doc;
}

}  // namespace tpurun

#include "tpurun/cloud/gcloud_call.hpp"

#include <fmt/format.h>

#include <ctime>
#include <nlohmann/json.hpp>
#include <regex>

#include "tpurun/tpu/kill_audit.hpp"
#include "tpurun/util/duration.hpp"

namespace tpurun {
namespace {

bool has(const std::string& text, const char* needle) { return text.find(needle) != std::string::npos; }

}  // namespace

ProcessResult GcloudCalls::run(const std::vector<std::string>& argv, std::chrono::seconds limit,
                               const CancelToken& cancel) const {
  return processes.run_bounded(argv, limit, cancel);
}

std::optional<std::string> GcloudCalls::audit(const std::string& event, const GcloudSpec& spec,
                                              const std::vector<std::string>& argv) const {
  if (audit_path.empty()) return std::nullopt;
  const nlohmann::json line = {{"time", format_utc_time(std::chrono::system_clock::now())},
                               {"event", event},
                               {"caller", user},
                               {"pod", pod},
                               {"tpu", spec.name},
                               {"zone", spec.zone},
                               {"project", spec.project},
                               {"command", argv}};
  if (auto error = append_audit(audit_path, line.dump() + "\n")) return *error + "; without a record, nothing is done";
  return std::nullopt;
}

std::string gcloud_said(const ProcessResult& r) {
  std::string text = r.err.empty() ? r.out : r.err;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  // gcloud prints an operation's error as a JSON object over several lines:
  // from its "ERROR:" line on, joined.
  size_t from = text.rfind("ERROR:");
  if (from == std::string::npos) {
    const size_t line = text.rfind('\n');
    from = line == std::string::npos ? 0 : line + 1;
  }
  std::string said;
  for (char c : text.substr(from)) {
    if (c == '\n') c = ' ';
    if (c == ' ' && !said.empty() && said.back() == ' ') continue;
    said.push_back(c);
  }
  if (said.size() > 400) said = said.substr(0, 397) + "...";
  return fmt::format("exit {}{}", r.exit_code, said.empty() ? "" : ": " + said);
}

bool is_transient(const ProcessResult& r) {
  if (r.exit_code == 0) return false;
  if (r.timed_out || r.exit_code == 124) return true;
  // gcloud prints an HTTP error as "HTTPError 503: ...", "HttpError accessing
  // <...>: response: <{'status': '503', ...}>" or the error's JSON ("code": 503).
  static const std::regex kTransient(
      R"((HTTPError |Error |'status': '|"code": |status=)(429|500|502|503|504)\b|RESOURCE_EXHAUSTED|UNAVAILABLE|)"
      R"(DEADLINE_EXCEEDED|[Tt]imed out|Connection reset|Connection aborted|RemoteDisconnected|Max retries exceeded)");
  return std::regex_search(r.err, kTransient);
}

CreateFailure classify_create_failure(const std::string& e) {
  if (has(e, "Quota") || has(e, "quota")) return CreateFailure::quota;
  if (has(e, "\"code\": 7,") || has(e, "PERMISSION_DENIED") || has(e, "\"code\": 16,") || has(e, "UNAUTHENTICATED") ||
      has(e, "does not have permission")) {
    return CreateFailure::permission;
  }
  if (has(e, "There is no more capacity") || has(e, "\"code\": 8,") || has(e, "RESOURCE_EXHAUSTED")) {
    return CreateFailure::capacity;
  }
  if (has(e, "Insufficient reserved capacity") || has(e, "\"code\": 9,")) return CreateFailure::reservation;
  if (has(e, "\"code\": 3,")) return CreateFailure::preempted;
  return CreateFailure::other;
}

bool tries_next_zone(CreateFailure f) {
  return f == CreateFailure::capacity || f == CreateFailure::reservation || f == CreateFailure::preempted;
}

std::string create_failure_fix(CreateFailure f, const GcloudSpec& spec) {
  const std::string project = spec.project.empty() ? "" : " --project " + spec.project;
  switch (f) {
    case CreateFailure::quota:
      return fmt::format("the project's TPU quota is used up: free some (gcloud compute tpus tpu-vm list --zone {}{}; "
                         "tpurun down), or ask for more (https://cloud.google.com/tpu/docs/quota)",
                         spec.zone, project);
    case CreateFailure::permission:
      return "gcloud's account may not create TPU VMs here: check `gcloud config list` (account, project) and that "
             "the account has roles/tpu.admin, or `gcloud auth login`";
    default:
      return "";
  }
}

}  // namespace tpurun

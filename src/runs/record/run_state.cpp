#include "tpurun/runs/record/run_state.hpp"

#include "runs/record/log_dir_layout.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tpurun/runs/record/preemption_json.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/util/atomic_file.hpp"
#include "tpurun/util/identity.hpp"
#include "tpurun/util/unique_fd.hpp"

namespace tpurun {
namespace {

constexpr std::array kVerdicts{"running", "restarting", "succeeded", "failed", "lost", "stopped", "preempted",
                              "cancelled"};
constexpr std::array kWorkerStates{"pending", "running", "succeeded", "failed", "lost", "stopped", "restarting"};

template <typename E, size_t N>
std::optional<E> parse_enum(const std::array<const char*, N>& names, const std::string& text) {
  for (size_t i = 0; i < N; ++i) {
    if (text == names[i]) return static_cast<E>(i);
  }
  return std::nullopt;
}

// Field 22 of /proc/PID/stat: the start time in clock ticks since boot;
// nullopt for a process that is gone or a zombie.
std::optional<long long> process_start(int pid) {
  std::string stat = read_small_file(fmt::format("/proc/{}/stat", pid));
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 3 && (field == "Z" || field == "X")) return std::nullopt;  // dead, not yet reaped
    if (i == 22) return std::strtoll(field.c_str(), nullptr, 10);
  }
  return std::nullopt;
}

nlohmann::json opt(const std::optional<int>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

}  // namespace

const char* to_string(RunVerdict v) { return kVerdicts[static_cast<size_t>(v)]; }
std::optional<RunVerdict> parse_run_verdict(const std::string& text) { return parse_enum<RunVerdict>(kVerdicts, text); }
bool is_final(RunVerdict v) { return v != RunVerdict::running && v != RunVerdict::restarting; }

const char* to_string(WorkerState s) { return kWorkerStates[static_cast<size_t>(s)]; }
std::optional<WorkerState> parse_worker_state(const std::string& text) {
  return parse_enum<WorkerState>(kWorkerStates, text);
}

std::string missing_logs_text(const MissingLogs& m) {
  return fmt::format("w{} {}: not every file of the run was copied here ({}); they are still in {} there", m.worker,
                     m.host, m.why, m.path);
}

void write_run_state(const std::string& log_dir, const RunState& s) {
  nlohmann::json workers = nlohmann::json::array();
  for (const WorkerStatus& w : s.workers) {
    workers.push_back({{"worker", w.worker}, {"state", to_string(w.state)}, {"pid", opt(w.pid)},
                       {"exit_code", opt(w.exit_code)}, {"detail", w.detail}});
  }
  nlohmann::json failure = nullptr;
  if (s.first_failure) {
    const GangFailure& f = *s.first_failure;
    failure = {{"worker", f.worker}, {"how", f.how},     {"exit_code", f.exit_code}, {"signal", f.signal},
               {"since", f.since},   {"at", f.at},       {"detail", f.detail}};
    if (!f.stacks.empty()) failure["stacks"] = f.stacks;
  }
  nlohmann::json preemptions = nlohmann::json::array();
  for (const Preemption& p : s.preemptions) preemptions.push_back(preemption_to_json(p));
  nlohmann::json missing = nlohmann::json::array();
  for (const MissingLogs& m : s.logs_missing) {
    missing.push_back({{"worker", m.worker}, {"host", m.host}, {"path", m.path}, {"why", m.why}});
  }
  nlohmann::json doc{{"verdict", to_string(s.verdict)},
                     {"attempt", s.attempt},
                     {"max_attempts", s.max_attempts},
                     {"on_failure", s.on_failure},
                     {"workers", workers},
                     {"first_failure", failure},
                     {"stopped_others", s.stopped_others},
                     {"message", s.message},
                     {"preemptions", preemptions},
                     {"stalled_since", s.stalled_since.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.stalled_since)},
                     {"idle_since", s.idle_since.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.idle_since)},
                     {"logs_missing", missing},
                     {"watcher",
                      {{"pid", s.watcher.pid},
                       {"host", s.watcher.host},
                       {"started", s.watcher.started},
                       {"heartbeat", s.watcher.heartbeat}}},
                     {"updated_at", s.updated_at}};
  write_file_atomic(state_json_path(log_dir),
                    doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

std::optional<RunState> read_run_state(const std::string& log_dir, std::string* problem) {
  std::string text = read_small_file_fresh(state_json_path(log_dir));
  if (text.empty()) return std::nullopt;
  try {
    auto doc = nlohmann::json::parse(text);
    RunState s;
    auto verdict = parse_run_verdict(doc.at("verdict").get<std::string>());
    if (!verdict) {
      if (problem) *problem = fmt::format("its verdict '{}' is none tpurun knows", doc.at("verdict").get<std::string>());
      return std::nullopt;
    }
    s.verdict = *verdict;
    s.attempt = doc.value("attempt", 1);
    s.max_attempts = doc.value("max_attempts", 1);
    s.on_failure = doc.value("on_failure", s.on_failure);
    for (const auto& w : doc.at("workers")) {
      WorkerStatus ws;
      ws.worker = w.at("worker");
      ws.state = parse_worker_state(w.at("state").get<std::string>()).value_or(WorkerState::pending);
      if (w.contains("pid") && w["pid"].is_number_integer()) ws.pid = w["pid"].get<int>();
      if (w.contains("exit_code") && w["exit_code"].is_number_integer()) ws.exit_code = w["exit_code"].get<int>();
      ws.detail = w.value("detail", "");
      s.workers.push_back(ws);
    }
    if (doc.contains("first_failure") && doc["first_failure"].is_object()) {
      const auto& f = doc["first_failure"];
      s.first_failure = GangFailure{f.value("worker", 0), f.value("how", ""),   f.value("exit_code", 0),
                                    f.value("signal", ""), f.value("since", ""), f.value("at", ""),
                                    f.value("detail", ""), f.value("stacks", "")};
    }
    s.stopped_others = doc.value("stopped_others", false);
    if (doc.contains("preemptions") && doc["preemptions"].is_array()) {
      for (const auto& p : doc["preemptions"]) {
        if (!p.is_object()) continue;
        s.preemptions.push_back(preemption_from_json(p));
      }
    }
    if (doc.contains("logs_missing") && doc["logs_missing"].is_array()) {
      for (const auto& m : doc["logs_missing"]) {
        if (!m.is_object()) continue;
        s.logs_missing.push_back({m.value("worker", 0), m.value("host", ""), m.value("path", ""), m.value("why", "")});
      }
    }
    s.message = doc.value("message", "");
    if (doc.contains("stalled_since") && doc["stalled_since"].is_string()) s.stalled_since = doc["stalled_since"];
    if (doc.contains("idle_since") && doc["idle_since"].is_string()) s.idle_since = doc["idle_since"];
    // "supervisor": what an older tpurun called the watcher.
    if (const char* key = doc.contains("watcher") ? "watcher" : doc.contains("supervisor") ? "supervisor" : nullptr) {
      const auto& sup = doc[key];
      s.watcher = {sup.value("pid", 0), sup.value("host", ""), sup.value("started", 0LL),
                      sup.value("heartbeat", 0LL)};
    }
    s.updated_at = doc.value("updated_at", "");
    return s;
  } catch (const nlohmann::json::exception& e) {
    if (problem) *problem = json_problem(e);
    return std::nullopt;
  }
}

WatcherInfo this_process_as_watcher() {
  WatcherInfo info;
  info.pid = ::getpid();
  info.host = host_name();
  info.started = process_start(info.pid).value_or(0);
  return info;
}

bool watcher_alive(const RunState& state, long long now_unix) {
  if (state.watcher.pid <= 0) return false;
  if (state.watcher.host == host_name()) {
    auto started = process_start(state.watcher.pid);
    return started && *started == state.watcher.started;
  }
  // Another dev VM: only its heartbeat tells (3 missed beats and it is gone).
  return now_unix - state.watcher.heartbeat <= 3 * kHeartbeatSeconds;
}

// `tpurun kill` may write the marker from another host: the log dir is
// opened first so that NFS revalidates it instead of trusting a cached miss.
std::optional<std::chrono::system_clock::time_point> stop_requested_at(const std::string& log_dir) {
  struct stat st{};
  UniqueFd dir(::open(log_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const bool found = dir ? ::fstatat(dir.get(), kStopMarker, &st, AT_SYMLINK_NOFOLLOW) == 0
                         : ::lstat(stop_marker_path(log_dir).c_str(), &st) == 0;
  if (!found) return std::nullopt;
  return std::chrono::system_clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec) +
                                               std::chrono::nanoseconds(st.st_mtim.tv_nsec));
}

bool stop_requested(const std::string& log_dir) { return stop_requested_at(log_dir).has_value(); }

}  // namespace tpurun

#pragma once
// The local record of `tpurun kill --force --yes`: one JSON object per
// signalled process, appended before any signal is sent to the caller's own
// audit file ($XDG_STATE_HOME/tpurun/audit.jsonl, else
// ~/.local/state/tpurun/audit.jsonl). Never a shared path: another user's
// symlink or file there could redirect or forge it. The tamper-resistant
// record is the worker's syslog, written as root by the kill script itself.
#include <ctime>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "tpurun/tpu/kill.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {

// {"time":"2025-11-22T01:02:03Z","event":"kill-force","caller":"alice","local_user":"alice",
//  "pod":"v4-32","worker":"w3","host":"10.0.0.4","pid":4242,"start_time":123,"user":"bob",
//  "uid":1002,"pgid":4242,"command":"python3 train.py","reason":"..."}  (one line, escaped)
std::string audit_entry(std::time_t when, const std::string& caller, const std::string& local_user,
                        const std::string& pod, const Worker& worker, const Victim& victim);

// $XDG_STATE_HOME/tpurun/audit.jsonl or ~/.local/state/tpurun/audit.jsonl.
std::string default_audit_path(const Environment& env);

// Appends `lines` (whole JSON lines) to the audit file at `path` in one write,
// fsynced. An error message on failure: the file or its directory is a
// symlink, not the caller's, or writable by others, or the write failed.
// Other writers (a TPU VM recreated by the run's watcher) use it too.
std::optional<std::string> append_audit(const std::string& path, const std::string& lines);

class AuditLog {
 public:
  AuditLog(std::string path, std::string local_user, std::string pod, std::function<std::time_t()> clock);
  // Appends one line per victim in one write. An error message on failure:
  // the file or its directory is a symlink, not the caller's, or writable by
  // others, or the write failed.
  std::optional<std::string> record(const Worker& worker, const LockScan& scan, const KillPlan& plan);
  // For KillRequest::before_signal: a plan that needs root is recorded
  // first, and on a worker where that fails nothing is signalled.
  decltype(KillRequest::before_signal) before_signal();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string local_user_;
  std::string pod_;
  std::function<std::time_t()> clock_;
  std::mutex mutex_;
};

}  // namespace tpurun

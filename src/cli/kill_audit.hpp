#pragma once
// The record of `tpurun kill --force --yes`: one line per signalled process,
// appended to <logs_root>/tpurun-audit.log on the dev host before any signal
// is sent, so that an override of another user's job is never silent.
#include <ctime>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "tpurun/tpu_kill.hpp"

namespace tpurun::cli {

// "2025-11-22T01:02:03Z tpurun-kill-force caller=alice local_user=alice worker=w3
//  host=10.0.0.4 pid=4242 user=bob uid=1002 command="python3 train.py""
std::string audit_line(std::time_t when, const std::string& caller, const std::string& local_user,
                       const Worker& worker, const ScannedProcess& victim);

class AuditLog {
 public:
  AuditLog(std::string path, std::string local_user, std::function<std::time_t()> clock);
  // Appends one line per victim in one write. An error message on failure.
  std::optional<std::string> record(const Worker& worker, const LockScan& scan, const KillPlan& plan);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string local_user_;
  std::function<std::time_t()> clock_;
  std::mutex mutex_;
};

}  // namespace tpurun::cli

#include "runs/record/log_dir_layout.hpp"

#include <unistd.h>

#include <fmt/format.h>

namespace tpurun {
namespace {

constexpr const char* kWatcherLog = "watcher.log";
constexpr const char* kOlderWatcherLog = "supervisor.log";

}  // namespace

std::string run_json_path(const std::string& log_dir) { return log_dir + "/" + kRunJson; }
std::string git_diff_path(const std::string& log_dir) { return log_dir + "/git.diff"; }
std::string state_json_path(const std::string& log_dir) { return log_dir + "/" + kStateJson; }
std::string stop_marker_path(const std::string& log_dir) { return log_dir + "/" + kStopMarker; }
std::string watcher_spare_path(const std::string& log_dir) { return log_dir + "/.watcher-spare"; }

std::string watcher_log_name(const std::string& log_dir) {
  const bool older = ::access((log_dir + "/" + kWatcherLog).c_str(), F_OK) != 0 &&
                     ::access((log_dir + "/" + kOlderWatcherLog).c_str(), F_OK) == 0;
  return older ? kOlderWatcherLog : kWatcherLog;
}
std::string watcher_log_path(const std::string& log_dir) { return log_dir + "/" + watcher_log_name(log_dir); }

std::string worker_log_name(int worker) { return fmt::format("worker{}.log", worker); }
std::string worker_log_path(const std::string& log_dir, int worker) { return log_dir + "/" + worker_log_name(worker); }

std::string job_file_name(int worker, int attempt, const char* ext) {
  if (attempt <= 1) return fmt::format("worker{}.{}", worker, ext);
  return fmt::format("worker{}.a{}.{}", worker, attempt, ext);
}
std::string job_file(const std::string& log_dir, int worker, int attempt, const char* ext) {
  return log_dir + "/" + job_file_name(worker, attempt, ext);
}

bool is_worker_record(int worker, const std::string& rel) {
  const std::string prefix = fmt::format("worker{}.", worker);
  return rel.starts_with(prefix) && rel.find('/') == std::string::npos;
}

std::string mirrored_path(int worker, const std::string& rel) {
  if (is_worker_record(worker, rel) || rel.starts_with("plugins/profile/")) return rel;
  return fmt::format("w{}/{}", worker, rel);
}

std::string tpu_vm_dir(const std::string& log_dir) { return log_dir + "/tpu-vm"; }
std::string recorded_tpu_vm_path(const std::string& log_dir) { return tpu_vm_dir(log_dir) + "/describe.json"; }
std::string metadata_dir(const std::string& log_dir) { return tpu_vm_dir(log_dir) + "/metadata"; }
std::string recorded_setup_path(const std::string& log_dir) { return log_dir + "/setup.sh"; }
std::string setup_log_path(const std::string& log_dir) { return log_dir + "/setup.log"; }

}  // namespace tpurun

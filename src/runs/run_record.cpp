#include "tpurun/run_record.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "tpurun/atomic_file.hpp"
#include "tpurun/suggest.hpp"

namespace fs = std::filesystem;

namespace tpurun {
namespace {

void make_dir(const std::string& path, mode_t mode, bool exclusive) {
  if (::mkdir(path.c_str(), mode) == 0) {
    ::chmod(path.c_str(), mode);  // umask must not narrow what other workers need
    return;
  }
  if (errno == EEXIST && !exclusive) return;
  throw std::runtime_error(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
}

}  // namespace

std::string tag_slug(const std::string& tag) {
  std::string slug;
  for (char c : tag) {
    if (c == '=') continue;
    bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-';
    slug.push_back(keep ? c : '-');
  }
  return slug;
}

std::string make_run_id(std::chrono::system_clock::time_point now, const std::string& rand6,
                        const std::string& pod, const std::vector<std::string>& tags) {
  std::string id = fmt::format("{:%Y%m%d_%H%M%S}_{}_{}", fmt::gmtime(std::chrono::system_clock::to_time_t(now)),
                               rand6, tag_slug(pod));
  for (const std::string& tag : tags) id += "_" + tag_slug(tag);
  return id;
}

std::string iso8601_utc(std::chrono::system_clock::time_point t) {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(t)));
}

std::string create_log_dir(const std::string& logs_root, const std::string& user,
                           const std::string& project, const std::string& run_id) {
  if (!fs::is_directory(logs_root)) {
    throw std::runtime_error(fmt::format("logs_root {} is not a directory on this host — is the shared "
                                         "(NFS) mount there?", logs_root));
  }
  const std::string user_dir = logs_root + "/" + user;
  const std::string project_dir = user_dir + "/" + project;
  make_dir(user_dir, 0755, false);
  make_dir(project_dir, 0755, false);
  const std::string dir = project_dir + "/" + run_id;
  make_dir(dir, 0755, true);
  return dir;
}

void write_run_record(const RunRecord& r, const std::string& git_diff) {
  nlohmann::json workers = nlohmann::json::array();
  for (const Worker& w : r.workers) workers.push_back({{"worker", w.index}, {"host", w.host}, {"port", w.port}});
  nlohmann::json doc{{"run_id", r.run_id},       {"user", r.user},
                     {"pod", r.pod},             {"project", r.project},
                     {"workers", workers},       {"command", r.command},
                     {"env_names", r.env_names},             {"tags", r.tags},
                     {"staged_dir", r.staged_dir}, {"log_dir", r.log_dir},
                     {"git", {{"sha", r.git_sha}, {"branch", r.git_branch}, {"dirty", r.git_dirty}}},
                     {"tree_hash", r.tree_hash}, {"created_at", r.created_at}};
  write_file_atomic(r.log_dir + "/run.json",
                    doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (!git_diff.empty()) write_file_atomic(r.log_dir + "/git.diff", git_diff);
}

RunRecord read_run_record(const std::string& log_dir) {
  const std::string path = log_dir + "/run.json";
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(read_small_file(path));
    RunRecord r;
    r.run_id = doc.at("run_id");
    r.user = doc.at("user");
    r.pod = doc.at("pod");
    r.project = doc.value("project", "");
    for (const auto& w : doc.at("workers")) r.workers.push_back({w.at("worker"), w.at("host"), w.value("port", 22)});
    r.command = doc.at("command").get<std::vector<std::string>>();
    r.env_names = doc.value("env_names", std::vector<std::string>{});
    if (doc.contains("env") && doc["env"].is_object()) {  // run.json before env_names
      for (const auto& [name, value] : doc["env"].items()) r.env_names.push_back(name);
    }
    r.tags = doc.value("tags", std::vector<std::string>{});
    r.staged_dir = doc.value("staged_dir", "");
    r.log_dir = log_dir;
    if (doc.contains("git")) {
      r.git_sha = doc["git"].value("sha", "");
      r.git_branch = doc["git"].value("branch", "");
      r.git_dirty = doc["git"].value("dirty", false);
    }
    r.tree_hash = doc.value("tree_hash", "");
    r.created_at = doc.value("created_at", "");
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("{}: unreadable run record: {}", path, e.what()));
  }
}

std::vector<std::string> list_run_dirs(const std::string& logs_root, const std::string& user) {
  std::vector<std::pair<std::string, std::string>> runs;  // (run id, dir)
  std::error_code ec;
  for (const auto& project : fs::directory_iterator(logs_root + "/" + user, ec)) {
    if (!project.is_directory(ec)) continue;
    for (const auto& run : fs::directory_iterator(project.path(), ec)) {
      if (fs::exists(run.path() / "run.json", ec)) runs.emplace_back(run.path().filename(), run.path());
    }
  }
  // Run ids start with the UTC time, so name order is time order.
  std::sort(runs.begin(), runs.end(), std::greater<>());
  std::vector<std::string> dirs;
  for (auto& [id, dir] : runs) dirs.push_back(dir);
  return dirs;
}

std::string find_run_dir(const std::string& logs_root, const std::string& user, const std::string& run) {
  std::vector<std::string> matches, ids;
  for (const std::string& dir : list_run_dirs(logs_root, user)) {
    std::string id = fs::path(dir).filename();
    ids.push_back(id);
    if (id == run) return dir;
    if (id.rfind(run, 0) == 0) matches.push_back(dir);
  }
  if (matches.size() == 1) return matches[0];
  if (matches.size() > 1) {
    throw std::runtime_error(fmt::format("run '{}' is ambiguous: {} runs start with it", run, matches.size()));
  }
  throw std::runtime_error(fmt::format("no run '{}' of {} under {}{} — `tpurun runs` lists them", run, user,
                                       logs_root, did_you_mean(run, ids)));
}

const char* to_string(JobState s) {
  switch (s) {
    case JobState::pending: return "pending";
    case JobState::running: return "running";
    case JobState::exited: return "exited";
    case JobState::lost: return "lost";
    case JobState::unknown: return "unknown";
  }
  return "unknown";
}

std::string worker_log_path(const std::string& log_dir, int worker) {
  return fmt::format("{}/worker{}.log", log_dir, worker);
}

WorkerJob read_worker_job(const std::string& log_dir, int worker) {
  WorkerJob job;
  job.worker = worker;
  std::istringstream pid_text(read_small_file(fmt::format("{}/worker{}.pid", log_dir, worker)));
  int pid = 0;
  if (pid_text >> pid) {
    job.pid = pid;
    job.state = JobState::running;
  }
  std::istringstream exit_text(read_small_file(fmt::format("{}/worker{}.exit", log_dir, worker)));
  int code = 0;
  if (exit_text >> code) {
    job.exit_code = code;
    job.state = JobState::exited;
  }
  return job;
}

}  // namespace tpurun

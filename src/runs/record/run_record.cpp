#include "tpurun/runs/record/run_record.hpp"

#include "runs/record/log_dir_layout.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/util/atomic_file.hpp"
#include "tpurun/util/safe_dir.hpp"
#include "tpurun/util/usage_error.hpp"
#include "tpurun/util/suggest.hpp"
#include "tpurun/util/unique_fd.hpp"

namespace fs = std::filesystem;

namespace tpurun {
namespace {

constexpr const char* kNotStarted = "not started: ";

// <logs_root>/<user>, which must be the caller's own (see safe_dir.hpp); nullopt
// when it does not exist yet. Throws UnsafeDirError when another user owns it,
// it is a symlink, or others can write it.
std::optional<SafeDir> open_user_logs(const std::string& logs_root, const std::string& user) {
  if (!is_plain_name(user)) throw std::runtime_error(fmt::format("invalid user name '{}'", user));
  auto dir = open_own_path(logs_root, {user}, Create::never);
  if (dir) return std::move(*dir);
  if (dir.error().kind == DirProblem::Kind::missing) return std::nullopt;
  throw UnsafeDirError(dir.error());
}

std::vector<std::string> dir_names(int fd) {
  std::vector<std::string> names;
  DIR* dir = ::fdopendir(::dup(fd));
  if (dir == nullptr) return names;
  while (const dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(dir);
  return names;
}

// A directory, not a symlink to one; `st` gets its lstat.
bool is_real_dir(int dir_fd, const std::string& name, struct stat& st) {
  return ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
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

std::string never_started_record(const std::string& why) {
  std::string line = why;
  std::replace(line.begin(), line.end(), '\n', ' ');
  return std::string("255\n") + kNotStarted + line + "\n";
}

std::string json_problem(const nlohmann::json::exception& e) {
  std::string text = e.what();  // "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
  if (const size_t close = text.find("] "); text.rfind("[json.exception.", 0) == 0 && close != std::string::npos) {
    text.erase(0, close + 2);
  }
  if (dynamic_cast<const nlohmann::json::parse_error*>(&e) != nullptr) return "not valid JSON (" + text + ")";
  return "not what tpurun writes (" + text + ")";
}

void check_tags(const std::vector<std::string>& tags, const std::string& pod) {
  size_t length = 15 + 1 + 6 + 1 + tag_slug(pod).size();  // <YYYYmmdd_HHMMSS>_<rand6>_<pod>
  for (const std::string& tag : tags) {
    const std::string slug = tag_slug(tag);
    if (tag.empty()) throw UsageError("--tag '': give a word, e.g. --tag b1024 or --tag lr=0.1");
    if (std::none_of(slug.begin(), slug.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); })) {
      throw UsageError(fmt::format("--tag '{}': a tag needs a letter or digit (it becomes '{}' in the run id)", tag,
                                   slug));
    }
    length += 1 + slug.size();
  }
  if (length > kMaxRunIdLength) {
    throw UsageError(fmt::format("--tag: the tags make the run id {} characters long; at most {} fit in a directory name "
                                 "with room to spare: use shorter tags", length, kMaxRunIdLength));
  }
}

std::string create_log_dir(const std::string& logs_root, const std::string& user,
                           const std::string& project, const std::string& run_id) {
  auto project_dir = open_own_path(logs_root, {user, project}, Create::if_missing);
  if (!project_dir) {
    const DirProblem& p = project_dir.error();
    if (p.parent && p.kind == DirProblem::Kind::missing) {
      throw std::runtime_error(fmt::format("logs_root {} is not a directory on this host — is the shared "
                                           "(NFS) mount there?", logs_root));
    }
    throw UnsafeDirError(p);
  }
  auto run_dir = open_own_dir(*project_dir, run_id, Create::exclusive);
  if (!run_dir) throw UnsafeDirError(run_dir.error());
  return logs_root + "/" + user + "/" + project + "/" + run_id;
}

void write_run_record(const RunRecord& r, const std::string& git_diff) {
  nlohmann::json workers = nlohmann::json::array();
  for (const Worker& w : r.workers) {
    workers.push_back({{"worker", w.index}, {"host", w.host}, {"port", w.port}});
    if (w.slice >= 0) workers.back().update({{"slice", w.slice}, {"slice_worker", w.slice_worker}});
    // A gcloud pod's worker is known by gcloud's HostKeyAlias, not by its
    // address: the watcher and kill --run check its host key under it.
    if (!w.host_key_alias.empty()) workers.back()["host_key_alias"] = w.host_key_alias;
  }
  nlohmann::json doc{{"run_id", r.run_id},       {"user", r.user},
                     {"pod", r.pod},             {"project", r.project},
                     {"workers", workers},       {"command", r.command},
                     {"env_names", r.env_names},             {"tags", r.tags},
                     {"staged_dir", r.staged_dir}, {"log_dir", r.log_dir},
                     {"git", {{"sha", r.git_sha}, {"branch", r.git_branch}, {"dirty", r.git_dirty}}},
                     {"tree_hash", r.tree_hash}, {"created_at", r.created_at},
                     {"gang", {{"on_failure", r.gang.on_failure}, {"restarts", r.gang.restarts},
                               {"lost_after_ms", r.gang.lost_after_ms}, {"grace_ms", r.gang.grace_ms},
                               {"stall_after_ms", r.gang.stall_after_ms}, {"on_stall", r.gang.on_stall}}}};
  if (!r.worker_log_dir.empty()) doc["on_workers"] = {{"staged_dir", r.worker_staged_dir}, {"log_dir", r.worker_log_dir}};
  if (!r.gang.restart_on_exit_codes.empty()) doc["gang"]["restart_on_exit_codes"] = r.gang.restart_on_exit_codes;
  if (r.gang.recreate) doc["gang"].update({{"recreate", true}, {"max_preemptions", r.gang.max_preemptions}});
  if (r.megascale) {
    doc["slices"] = r.slices;
    doc["megascale"] = {{"num_slices", r.megascale->num_slices}, {"coordinator", r.megascale->coordinator},
                        {"port", r.megascale->port}};
  }
  write_file_atomic(run_json_path(r.log_dir),
                    doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (!git_diff.empty()) write_file_atomic(git_diff_path(r.log_dir), git_diff);
}

RunRecord read_run_record(const std::string& log_dir) {
  const std::string path = run_json_path(log_dir);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(read_small_file(path));
    RunRecord r;
    r.run_id = doc.at("run_id");
    r.user = doc.at("user");
    r.pod = doc.at("pod");
    r.project = doc.value("project", "");
    for (const auto& w : doc.at("workers")) {
      r.workers.push_back({w.at("worker"), w.at("host"), w.value("port", 22), w.value("host_key_alias", ""),
                           w.value("slice", -1), w.value("slice_worker", 0)});
    }
    if (doc.contains("megascale") && doc["megascale"].is_object()) {
      const auto& m = doc["megascale"];
      r.megascale = MultiSlice{m.at("num_slices"), m.at("coordinator"), m.at("port")};
      r.slices = doc.value("slices", std::vector<std::string>{});
    }
    r.command = doc.at("command").get<std::vector<std::string>>();
    r.env_names = doc.value("env_names", std::vector<std::string>{});
    if (doc.contains("env") && doc["env"].is_object()) {  // run.json before env_names
      for (const auto& [name, value] : doc["env"].items()) r.env_names.push_back(name);
    }
    r.tags = doc.value("tags", std::vector<std::string>{});
    r.staged_dir = doc.value("staged_dir", "");
    r.log_dir = log_dir;
    if (doc.contains("on_workers") && doc["on_workers"].is_object()) {
      r.worker_staged_dir = doc["on_workers"].value("staged_dir", "");
      r.worker_log_dir = doc["on_workers"].value("log_dir", "");
    }
    if (doc.contains("git")) {
      r.git_sha = doc["git"].value("sha", "");
      r.git_branch = doc["git"].value("branch", "");
      r.git_dirty = doc["git"].value("dirty", false);
    }
    r.tree_hash = doc.value("tree_hash", "");
    r.created_at = doc.value("created_at", "");
    if (doc.contains("gang") && doc["gang"].is_object()) {
      // A field the record lacks keeps GangRules' default.
      const auto& g = doc["gang"];
      GangRules& rules = r.gang;
      rules.on_failure = g.value("on_failure", rules.on_failure);
      rules.restarts = g.value("restarts", rules.restarts);
      rules.lost_after_ms = g.value("lost_after_ms", rules.lost_after_ms);
      rules.grace_ms = g.value("grace_ms", rules.grace_ms);
      rules.restart_on_exit_codes = g.value("restart_on_exit_codes", rules.restart_on_exit_codes);
      rules.recreate = g.value("recreate", rules.recreate);
      rules.max_preemptions = g.value("max_preemptions", rules.max_preemptions);
      rules.stall_after_ms = g.value("stall_after_ms", rules.stall_after_ms);
      rules.on_stall = g.value("on_stall", rules.on_stall);
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("{}: unreadable run record: {}", path, json_problem(e)));
  }
}

std::vector<std::string> list_run_dirs(const std::string& logs_root, const std::string& user) {
  std::vector<std::pair<std::string, std::string>> runs;  // (run id, dir)
  auto user_dir = open_user_logs(logs_root, user);
  if (!user_dir) return {};
  const std::string base = logs_root + "/" + user;
  for (const std::string& project : dir_names(user_dir->fd.get())) {
    struct stat st {};
    if (!is_real_dir(user_dir->fd.get(), project, st)) continue;
    // Only the caller's own, private project dirs; anything else stops here.
    auto project_dir = open_own_dir(*user_dir, project, Create::never);
    if (!project_dir) throw UnsafeDirError(project_dir.error());
    for (const std::string& run : dir_names(project_dir->fd.get())) {
      if (!is_real_dir(project_dir->fd.get(), run, st)) continue;
      const std::string dir = base + "/" + project + "/" + run;
      if (auto bad = check_own_dir(st, dir)) throw UnsafeDirError(*bad);
      std::string record = run_json_path(run);
      if (::fstatat(project_dir->fd.get(), record.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      runs.emplace_back(run, dir);
    }
  }
  // Run ids start with the UTC time, so name order is time order.
  std::sort(runs.begin(), runs.end(), std::greater<>());
  std::vector<std::string> dirs;
  for (auto& [id, dir] : runs) dirs.push_back(dir);
  return dirs;
}

std::string find_run_dir(const std::string& logs_root, const std::string& user, const std::string& run) {
  const std::vector<std::string> dirs = list_run_dirs(logs_root, user);
  if (run == "last" || run == "latest") {
    if (dirs.empty()) throw std::runtime_error(fmt::format("no runs of {} under {} yet", user, logs_root));
    return dirs.front();
  }
  std::vector<std::string> matches, ids;
  for (const std::string& dir : dirs) {
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

namespace {

WorkerJob job_from(int worker, const std::string& pid_file, const std::string& exit_file) {
  WorkerJob job;
  job.worker = worker;
  std::istringstream pid_text(pid_file);
  int pid = 0;
  if (pid_text >> pid) {
    job.pid = pid;
    job.state = JobState::running;
  }
  std::istringstream exit_text(exit_file);
  int code = 0;
  if (exit_text >> code) {
    job.exit_code = code;
    job.state = JobState::exited;
    std::string rest;
    std::getline(exit_text, rest);  // the end of the first line
    if (std::getline(exit_text, rest) && rest.rfind(kNotStarted, 0) == 0) {
      job.never_started = rest.substr(std::string(kNotStarted).size());
      if (job.never_started.empty()) job.never_started = "the job did not start";
    }
  }
  return job;
}

}  // namespace

WorkerJob read_worker_job(const std::string& log_dir, int worker, int attempt) {
  Worker w;
  w.index = worker;
  return read_worker_jobs(log_dir, {w}, attempt).front();
}

std::vector<WorkerJob> read_worker_jobs(const std::string& log_dir, const std::vector<Worker>& workers, int attempt) {
  std::vector<WorkerJob> jobs;
  // open() of the dir is NFS's close-to-open check of it: a changed dir drops
  // the cached lookups (found or not) under it. (Never O_PATH: that skips the
  // check. Opened again on every call, never kept: docs/simulator-nfs.md.)
  UniqueFd dir(::open(log_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (const Worker& w : workers) {
    const std::string pid = job_file_name(w.index, attempt, "pid");
    const std::string exit = job_file_name(w.index, attempt, "exit");
    if (!dir) {
      jobs.push_back(job_from(w.index, read_small_file(log_dir + "/" + pid), read_small_file(log_dir + "/" + exit)));
      continue;
    }
    jobs.push_back(job_from(w.index, read_small_file_at(dir.get(), pid), read_small_file_at(dir.get(), exit)));
    struct stat st {};
    if (jobs.back().exit_code && ::fstatat(dir.get(), exit.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      jobs.back().exited_at = std::chrono::system_clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec) +
                                                                    std::chrono::nanoseconds(st.st_mtim.tv_nsec));
    }
  }
  return jobs;
}

}  // namespace tpurun

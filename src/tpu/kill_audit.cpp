#include "tpurun/tpu/kill_audit.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "tpurun/util/duration.hpp"
#include "tpurun/util/identity.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {
namespace {

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  void reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

std::string errno_text() { return std::strerror(errno); }

// What makes an existing file or directory unsafe to write into, or "".
std::string unsafe(const struct stat& st) {
  if (st.st_uid != ::geteuid()) return fmt::format("it belongs to uid {}, not to you", st.st_uid);
  if ((st.st_mode & 022) != 0) return fmt::format("its mode {:04o} lets others write to it", st.st_mode & 07777);
  return "";
}

// Creates the missing directories of `dir` (0700) and opens it without
// following a symlink at its last component.
std::optional<std::string> open_dir(const std::string& dir, Fd& out) {
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    const std::string prefix = dir.substr(0, slash);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST)
      return fmt::format("cannot create {}: {}", prefix, errno_text());
    if (slash == std::string::npos) break;
  }
  out.reset(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (out.get() < 0) return fmt::format("cannot open the directory {}: {}", dir, errno_text());
  struct stat st {};
  if (::fstat(out.get(), &st) != 0) return fmt::format("cannot stat {}: {}", dir, errno_text());
  if (auto why = unsafe(st); !why.empty()) return fmt::format("refusing the directory {}: {}", dir, why);
  return std::nullopt;
}

}  // namespace

std::string audit_entry(std::time_t when, const std::string& caller, const std::string& local_user,
                        const std::string& pod, const Worker& worker, const Victim& victim) {
  const std::string stamp = format_utc_time(std::chrono::system_clock::from_time_t(when));
  const ScannedProcess& p = victim.process;
  nlohmann::ordered_json entry{
      {"time", stamp},        {"event", "kill-force"},       {"caller", caller},
      {"local_user", local_user}, {"pod", pod},              {"worker", worker.label()},
      {"host", worker.host},  {"pid", p.pid},                {"start_time", p.start_time},
      {"user", p.user},       {"uid", p.uid},                {"pgid", p.pgid},
      {"command", p.command}, {"reason", victim.reason}};
  // dump() escapes quotes and control characters; bytes that are not UTF-8 become U+FFFD.
  return entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string default_audit_path(const Environment& env) { return state_dir(env) + "/audit.jsonl"; }

AuditLog::AuditLog(std::string path, std::string local_user, std::string pod, std::function<std::time_t()> clock)
    : path_(std::move(path)), local_user_(std::move(local_user)), pod_(std::move(pod)), clock_(std::move(clock)) {}

std::optional<std::string> append_audit(const std::string& path, const std::string& text) {
  const size_t slash = path.rfind('/');
  if (path.empty() || path.front() != '/' || slash == 0) {
    return fmt::format("the audit log path {} is not absolute", path);
  }
  Fd dir;
  if (auto error = open_dir(path.substr(0, slash), dir)) return "audit log: " + *error;
  const std::string name = path.substr(slash + 1);
  Fd file(::openat(dir.get(), name.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (file.get() < 0) {
    return fmt::format("cannot open the audit log {}: {}{}", path, errno_text(),
                       errno == ELOOP ? " (it is a symlink; remove it)" : "");
  }
  struct stat st {};
  if (::fstat(file.get(), &st) != 0) return fmt::format("cannot stat the audit log {}: {}", path, errno_text());
  std::string why = !S_ISREG(st.st_mode) ? "it is not a regular file"
                    : st.st_nlink != 1   ? "it has other hard links"
                                         : unsafe(st);
  if (!why.empty()) return fmt::format("refusing the audit log {}: {}", path, why);
  const ssize_t written = ::write(file.get(), text.data(), text.size());
  if (written != static_cast<ssize_t>(text.size()) || ::fsync(file.get()) != 0) {
    return fmt::format("cannot write the audit log {}: {}", path, errno_text());
  }
  return std::nullopt;
}

std::optional<std::string> AuditLog::record(const Worker& worker, const LockScan& scan, const KillPlan& plan) {
  std::string text;
  const std::time_t now = clock_();
  for (const Victim& v : plan.victims) text += audit_entry(now, scan.caller_user, local_user_, pod_, worker, v);
  std::lock_guard lock(mutex_);
  return append_audit(path_, text);
}

decltype(KillRequest::before_signal) AuditLog::before_signal() {
  return [this](const Worker& worker, const LockScan& scan, const KillPlan& plan) -> std::optional<std::string> {
    if (!plan.needs_root) return std::nullopt;
    if (auto error = record(worker, scan, plan)) return *error + "; nothing was signalled";
    return std::nullopt;
  };
}

}  // namespace tpurun

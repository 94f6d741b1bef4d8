#include "cli/kill_audit.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tpurun::cli {
namespace {

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(static_cast<unsigned char>(c) < 0x20 ? '?' : c);
  }
  return out + "\"";
}

}  // namespace

std::string audit_line(std::time_t when, const std::string& caller, const std::string& local_user,
                       const Worker& worker, const ScannedProcess& victim) {
  std::tm utc{};
  gmtime_r(&when, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return fmt::format(
      "{} tpurun-kill-force caller={} local_user={} worker={} host={} pid={} user={} uid={} command={}\n",
      stamp, caller, local_user.empty() ? "?" : local_user, worker.label(), worker.host, victim.pid,
      victim.user.empty() ? "?" : victim.user, victim.uid, quoted(victim.command));
}

AuditLog::AuditLog(std::string path, std::string local_user, std::function<std::time_t()> clock)
    : path_(std::move(path)), local_user_(std::move(local_user)), clock_(std::move(clock)) {}

std::optional<std::string> AuditLog::record(const Worker& worker, const LockScan& scan,
                                            const KillPlan& plan) {
  std::string text;
  const std::time_t now = clock_();
  for (const Victim& v : plan.victims)
    text += audit_line(now, scan.caller_user, local_user_, worker, v.process);
  std::lock_guard lock(mutex_);
  // Every admin appends to the same shared file, so whoever creates it makes
  // it writable for all (it sits in the shared logs_root, not a secure place).
  int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd >= 0) {
    ::fchmod(fd, 0666);
  } else if (errno == EEXIST) {
    fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  }
  if (fd < 0) return fmt::format("cannot open the audit log {}: {}", path_, std::strerror(errno));
  ssize_t written = ::write(fd, text.data(), text.size());
  int saved = errno;
  ::close(fd);
  if (written != static_cast<ssize_t>(text.size())) {
    return fmt::format("cannot write the audit log {}: {}", path_, std::strerror(saved));
  }
  return std::nullopt;
}

}  // namespace tpurun::cli

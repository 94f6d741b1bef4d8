// Where the keeper lives, and what makes that place safe: a directory that is
// the user's own, not a symlink, and that nobody else can enter (0700), as
// OpenSSH asks of a ControlPath's directory and ssh-agent of its socket's.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

// Inlined, as in fanout/collapse.cpp: one short text, and the portable build
// (scripts/package) links no libxxhash.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "tpurun/transport/keeper/keeper.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/usage_error.hpp"
#include "tpurun/util/version.hpp"

namespace tpurun {
namespace {

// sun_path holds 108 bytes with its NUL; the socket's name is 29 of them.
constexpr size_t kMaxSocketPath = 107;
constexpr size_t kSocketName = 29;  // "/keeper-" + 16 hex digits + ".sock"

std::optional<std::string> private_dir_problem(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return fmt::format("{}: {}", dir, std::strerror(errno));
  if (S_ISLNK(st.st_mode)) return fmt::format("{} is a symlink", dir);
  if (!S_ISDIR(st.st_mode)) return fmt::format("{} is not a directory", dir);
  if (st.st_uid != ::getuid()) return fmt::format("{} belongs to uid {}, not to you (uid {})", dir, st.st_uid, ::getuid());
  if ((st.st_mode & 077) != 0) {
    return fmt::format("{} has mode {:04o}: others could reach the keeper's socket (chmod 700 {})", dir,
                       st.st_mode & 07777, dir);
  }
  return std::nullopt;
}

}  // namespace

Result<KeeperPlace, std::string> keeper_place(const Environment& env) {
  std::string dir;
  if (auto runtime = env.get("XDG_RUNTIME_DIR"); runtime && !runtime->empty() && runtime->front() == '/') {
    dir = *runtime + "/tpurun";
  }
  if (dir.empty() || dir.size() + kSocketName > kMaxSocketPath) dir = fmt::format("/tmp/tpurun-{}", ::getuid());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return unexpected(fmt::format("cannot make {}: {}", dir, std::strerror(errno)));
  }
  if (auto problem = private_dir_problem(dir)) return unexpected(*problem);
  // One keeper per version and per authenticating environment: a keeper of
  // another tpurun is never asked, and one started with another agent socket
  // never signs for this one.
  std::string identity = version_line();
  for (const char* name : {"HOME", "SSH_AUTH_SOCK", "USER"}) identity += "\n" + env.get(name).value_or("");
  const auto hash = XXH3_64bits(identity.data(), identity.size());
  KeeperPlace place;
  place.dir = dir;
  place.socket = fmt::format("{}/keeper-{:016x}.sock", dir, hash);
  place.log = fmt::format("{}/keeper.log", dir);
  return place;
}

std::chrono::milliseconds keeper_idle(const Environment& env) {
  const auto value = env.get("TPURUN_KEEP");
  if (!value || value->empty()) return std::chrono::minutes(10);
  if (*value == "0" || *value == "off" || *value == "no") return std::chrono::milliseconds(0);
  try {
    return parse_duration(*value);
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("TPURUN_KEEP={}: {} (a duration such as 10m or 90s, or 0 to turn the keeper off)",
                                 *value, e.what()));
  }
}

}  // namespace tpurun

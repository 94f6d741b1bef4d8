// open_shared_root / open_own_dir: every step an lstat, then an
// openat(O_NOFOLLOW) relative to the verified directory above, then an fstat
// of what was opened that must be the same inode with the same checks passed.
#include "tpurun/util/safe_dir.hpp"

#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

namespace tpurun {
namespace {

std::string user_name(uid_t uid) {
  passwd pw{};
  passwd* found = nullptr;
  char buffer[4096];
  if (::getpwuid_r(uid, &pw, buffer, sizeof buffer, &found) == 0 && found != nullptr)
    return found->pw_name;
  return "uid " + std::to_string(uid);
}

DirProblem problem(DirProblem::Kind kind, const std::string& path, bool parent, int err = 0) {
  DirProblem p;
  p.kind = kind;
  p.path = path;
  p.parent = parent;
  p.err = err;
  return p;
}

DirProblem problem_with_owner(DirProblem::Kind kind, const std::string& path, bool parent,
                              const struct stat& st) {
  DirProblem p = problem(kind, path, parent);
  p.owner = user_name(st.st_uid);
  p.owner_is_caller = st.st_uid == ::geteuid();
  p.caller = user_name(::geteuid());
  p.mode = st.st_mode & 07777;
  return p;
}

// The checks, on an lstat or fstat result. Parents (the root and above) may
// be root's, the squashed root's (NFS root_squash: what root makes through a
// client belongs to nobody, 65534, and root on any client already has every
// user's powers there) or the caller's; writable by group or others only
// when sticky. Own dirs must be the caller's and writable by the caller alone.
std::optional<DirProblem> check(const struct stat& st, const std::string& path, bool parent) {
  using Kind = DirProblem::Kind;
  if (S_ISLNK(st.st_mode)) return problem_with_owner(Kind::symlink, path, parent, st);
  if (!S_ISDIR(st.st_mode)) return problem_with_owner(Kind::not_directory, path, parent, st);
  uid_t me = ::geteuid();
  bool owner_ok = parent ? (st.st_uid == 0 || st.st_uid == kSquashedRootUid || st.st_uid == me) : st.st_uid == me;
  if (!owner_ok) return problem_with_owner(Kind::foreign_owner, path, parent, st);
  bool others_write = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  if (others_write && (!parent || (st.st_mode & S_ISVTX) == 0))
    return problem_with_owner(Kind::writable, path, parent, st);
  return std::nullopt;
}

// Checks dir_fd/name before and after opening it; `flags` add to O_NOFOLLOW|O_DIRECTORY.
Result<SafeDir, DirProblem> open_checked(int dir_fd, const std::string& name,
                                         const std::string& path, bool parent, int flags) {
  struct stat before {};
  if (::fstatat(dir_fd, name.c_str(), &before, AT_SYMLINK_NOFOLLOW) != 0) {
    return unexpected(problem(errno == ENOENT ? DirProblem::Kind::missing : DirProblem::Kind::io,
                              path, parent, errno));
  }
  if (auto bad = check(before, path, parent)) {
    if (bad->kind == DirProblem::Kind::symlink) {
      char target[PATH_MAX];
      ssize_t n = ::readlinkat(dir_fd, name.c_str(), target, sizeof target - 1);
      if (n >= 0) bad->link_target.assign(target, static_cast<size_t>(n));
    }
    return unexpected(*bad);
  }
  UniqueFd fd(::openat(dir_fd, name.c_str(), flags | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return unexpected(problem(DirProblem::Kind::io, path, parent, errno));
  struct stat after {};
  if (::fstat(fd.get(), &after) != 0)
    return unexpected(problem(DirProblem::Kind::io, path, parent, errno));
  if (after.st_dev != before.st_dev || after.st_ino != before.st_ino) {
    // Replaced between the two looks: only someone with write access to the
    // directory above could do that; say what is there now.
    return unexpected(check(after, path, parent).value_or(
        problem(DirProblem::Kind::io, path, parent, EAGAIN)));
  }
  if (auto bad = check(after, path, parent)) return unexpected(*bad);
  return SafeDir{std::move(fd), path};
}

std::string join(const std::string& dir, const std::string& name) {
  return dir.ends_with('/') ? dir + name : dir + "/" + name;
}

}  // namespace

std::optional<DirProblem> check_own_dir(const struct stat& st, const std::string& path) {
  return check(st, path, false);
}

bool is_plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

Result<SafeDir, DirProblem> open_shared_root(const std::string& root) {
  char resolved[PATH_MAX];
  if (::realpath(root.c_str(), resolved) == nullptr) {
    return unexpected(problem(errno == ENOENT ? DirProblem::Kind::missing : DirProblem::Kind::io,
                              root, true, errno));
  }
  std::string canonical = resolved;
  UniqueFd fd(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return unexpected(problem(DirProblem::Kind::io, "/", true, errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return unexpected(problem(DirProblem::Kind::io, "/", true, errno));
  if (auto bad = check(st, "/", true)) return unexpected(*bad);
  SafeDir dir{std::move(fd), "/"};
  for (std::size_t start = 1; start < canonical.size();) {
    std::size_t end = canonical.find('/', start);
    if (end == std::string::npos) end = canonical.size();
    std::string name = canonical.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;
    auto next = open_checked(dir.fd.get(), name, join(dir.path, name), true, O_PATH);
    if (!next) return unexpected(next.error());
    dir = std::move(*next);
  }
  return dir;
}

Result<SafeDir, DirProblem> open_own_dir(const SafeDir& parent, const std::string& name,
                                         Create create, mode_t mode) {
  const std::string path = join(parent.path, name);
  if (!is_plain_name(name)) return unexpected(problem(DirProblem::Kind::io, path, false, EINVAL));
  if (create != Create::never) {
    // The umask narrows `mode`; nothing widens it afterwards.
    if (::mkdirat(parent.fd.get(), name.c_str(), mode) != 0 &&
        (errno != EEXIST || create == Create::exclusive)) {
      return unexpected(problem(DirProblem::Kind::io, path, false, errno));
    }
  }
  return open_checked(parent.fd.get(), name, path, false, O_RDONLY);
}

Result<SafeDir, DirProblem> open_own_path(const std::string& root,
                                          const std::vector<std::string>& names, Create create) {
  auto dir = open_shared_root(root);
  if (!dir) return dir;
  // Messages name the root as configured, not as resolved.
  dir->path = root;
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto next = open_own_dir(*dir, names[i], create, i == 0 ? kPrivateDirMode : kOwnDirMode);
    if (!next) return next;
    dir = std::move(next);
  }
  return dir;
}

}  // namespace tpurun

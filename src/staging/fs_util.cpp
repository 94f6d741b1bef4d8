#include "staging/fs_util.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace tpurun::staging {

std::string errno_text(int err) { return std::strerror(err); }

int open_dir_at(int dir_fd, const char* name) {
  return ::openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

mode_t current_umask() {
  UniqueFd fd(::open("/proc/self/status", O_RDONLY | O_CLOEXEC));
  char buffer[4096];
  ssize_t n = fd ? ::read(fd.get(), buffer, sizeof buffer - 1) : -1;
  if (n > 0) {
    buffer[n] = '\0';
    if (const char* line = std::strstr(buffer, "\nUmask:"))
      return static_cast<mode_t>(std::strtoul(line + 8, nullptr, 8));
  }
  return 022;
}

std::int64_t mtime_ns(const struct stat& st) {
  return std::int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
}

std::int64_t ctime_ns(const struct stat& st) {
  return std::int64_t{st.st_ctim.tv_sec} * 1'000'000'000 + st.st_ctim.tv_nsec;
}

namespace {

struct Removal {
  std::string* failed_path;
  std::uint64_t* bytes_freed;
  int first_error = 0;

  void fail(int err, const std::string& path) {
    if (first_error != 0) return;
    first_error = err;
    if (failed_path != nullptr) *failed_path = path;
  }

  // Empties the directory open as `fd`; `path` is only for messages.
  void empty_dir(int fd, const std::string& path) {
    DIR* dir = ::fdopendir(::dup(fd));
    if (dir == nullptr) return fail(errno, path);
    while (dirent* entry = ::readdir(dir)) {
      const char* name = entry->d_name;
      if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
      remove_entry(fd, name, path + "/" + name, entry->d_type);
    }
    ::closedir(dir);
  }

  // Every step is on an fd of what was looked at: a symlink swapped in for a
  // directory is unlinked, never followed, and never chmod'ed through.
  void remove_entry(int parent_fd, const char* name, const std::string& path, unsigned char type) {
    struct stat st {};
    if (type == DT_DIR || type == DT_UNKNOWN || bytes_freed != nullptr) {
      UniqueFd at(::openat(parent_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
      if (!at || ::fstat(at.get(), &st) != 0) {
        if (errno != ENOENT) fail(errno, path);
        return;
      }
      if (S_ISDIR(st.st_mode)) return remove_dir(parent_fd, name, path, at.get(), st);
    }
    if (::unlinkat(parent_fd, name, 0) == 0) {
      if (bytes_freed != nullptr && S_ISREG(st.st_mode) && st.st_nlink == 1)
        *bytes_freed += st.st_size;
    } else if (errno != ENOENT) {
      fail(errno, path);
    }
  }

  // `at` is an O_PATH fd of the directory. Snapshots are read-only, so it is
  // made user-writable first: through /proc/self/fd, as fchmod refuses O_PATH
  // fds, and that names exactly the inode opened.
  void remove_dir(int parent_fd, const char* name, const std::string& path, int at,
                  const struct stat& st) {
    if ((st.st_mode & S_IRWXU) != S_IRWXU) {
      std::string self = fmt::format("/proc/self/fd/{}", at);
      if (::chmod(self.c_str(), (st.st_mode & 07777) | S_IRWXU) != 0) return fail(errno, path);
    }
    UniqueFd fd(::openat(at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return fail(errno, path);
    empty_dir(fd.get(), path);
    if (::unlinkat(parent_fd, name, AT_REMOVEDIR) != 0 && errno != ENOENT) fail(errno, path);
  }
};

}  // namespace

int remove_tree_at(int dir_fd, const std::string& name, std::string* failed_path,
                   std::uint64_t* bytes_freed) {
  Removal removal{failed_path, bytes_freed};
  removal.remove_entry(dir_fd, name.c_str(), name, DT_UNKNOWN);
  return removal.first_error;
}

std::vector<std::string> list_dir_names(int dir_fd) {
  std::vector<std::string> names;
  DIR* dir = ::fdopendir(::dup(dir_fd));
  if (dir == nullptr) return names;
  ::rewinddir(dir);  // the dup shares its offset with dir_fd: an earlier listing left it at the end
  while (dirent* entry = ::readdir(dir)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0)
      names.emplace_back(entry->d_name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace tpurun::staging

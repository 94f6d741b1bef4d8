#include "staging/dir_cursor.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>

namespace tpurun::staging {
namespace {

bool is_within(std::string_view dir, std::string_view ancestor) {
  return dir.size() > ancestor.size() && dir.substr(0, ancestor.size()) == ancestor &&
         dir[ancestor.size()] == '/';
}

}  // namespace

// The snapshot's own dirs are only ever a dirfd for creating in or linking
// from: O_PATH, which opens nothing on the file system (on NFS, and FUSE, a
// plain open of a directory is a request, and so is its close).
int DirCursor::open_at(int parent, const char* name) const {
  if (use_ == Use::read) return open_dir_at(parent, name);
  return ::openat(parent, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int DirCursor::parent_of(std::string_view path, std::string_view* name) {
  size_t slash = path.rfind('/');
  std::string_view dir =
      slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
  *name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  while (!stack_.empty() && stack_.back().path != dir && !is_within(dir, stack_.back().path)) {
    stack_.pop_back();
  }
  while ((stack_.empty() ? std::string_view() : std::string_view(stack_.back().path)) != dir) {
    size_t start = stack_.empty() ? 0 : stack_.back().path.size() + 1;
    size_t end = dir.find('/', start);
    if (end == std::string_view::npos) end = dir.size();
    std::string component(dir.substr(start, end - start));
    int parent = stack_.empty() ? root_fd_ : stack_.back().fd.get();
    if (component.empty() || component == "." || component == "..") return errno = EINVAL, -1;
    int fd = open_at(parent, component.c_str());
    if (fd < 0 && errno == ENOENT && use_ == Use::build) {
      if (::mkdirat(parent, component.c_str(), 0755) != 0 && errno != EEXIST) return -1;
      fd = open_at(parent, component.c_str());
    }
    if (fd < 0) return -1;
    stack_.push_back({std::string(dir.substr(0, end)), UniqueFd(fd)});
  }
  return stack_.empty() ? root_fd_ : stack_.back().fd.get();
}

}  // namespace tpurun::staging

// Listing outside git: a walk of the tree that never follows symlinks.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "staging/file_list.hpp"
#include "staging/fs_util.hpp"

namespace tpurun::staging {
namespace {

class TreeWalk {
 public:
  TreeWalk(const IgnoreRules& rules, const CancelToken& cancel, bool defaults) : cancel_(cancel) {
    if (defaults) rules_ = IgnoreRules::walk_defaults();
    rules_.append(rules);
  }

  // Lists dir_fd (whose path is `prefix`, "" for the root) recursively.
  bool walk(int dir_fd, const std::string& prefix) {
    DIR* dir = ::fdopendir(::dup(dir_fd));
    if (dir == nullptr) return fail(prefix.empty() ? "." : prefix, errno);
    std::vector<std::string> subdirs;
    while (dirent* entry = ::readdir(dir)) {
      if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) continue;
      std::string path = prefix.empty() ? entry->d_name : prefix + "/" + entry->d_name;
      if (entry->d_type == DT_DIR) {
        if (!rules_.matches(path, true)) subdirs.emplace_back(entry->d_name);
        continue;
      }
      SourceFile file;
      int error = 0;
      EntryKind kind = classify_entry(dir_fd, entry->d_name, file, error);
      if (kind == EntryKind::directory) {  // d_type was DT_UNKNOWN
        if (!rules_.matches(path, true)) subdirs.emplace_back(entry->d_name);
      } else if (kind == EntryKind::staged) {
        if (rules_.matches(path, false)) continue;
        file.path = std::move(path);
        listing.files.push_back(std::move(file));
      } else if (kind == EntryKind::special) {
        if (!rules_.matches(path, false))
          listing.notes.push_back("skipped " + path + ": not a regular file or symlink");
      } else if (error != 0) {
        ::closedir(dir);
        return fail(path, error);
      }
    }
    ::closedir(dir);
    for (const std::string& name : subdirs) {
      if (cancel_.cancelled()) return false;
      std::string path = prefix.empty() ? name : prefix + "/" + name;
      UniqueFd fd(open_dir_at(dir_fd, name.c_str()));
      if (!fd) {
        if (errno == ENOENT) continue;  // removed while we walked
        return fail(path, errno);
      }
      if (!walk(fd.get(), path)) return false;
    }
    return true;
  }

  SourceListing listing;
  std::optional<StageError> error;

 private:
  bool fail(const std::string& path, int err) {
    error = StageError{"cannot read " + path + ": " + errno_text(err) +
                       " (fix its permissions, or list it in .tpurunignore)"};
    return false;
  }

  IgnoreRules rules_;
  const CancelToken& cancel_;
};

}  // namespace

Result<SourceListing, StageError> walk_files(int root_fd, const IgnoreRules& rules,
                                             const CancelToken& cancel, bool defaults) {
  TreeWalk walk(rules, cancel, defaults);
  if (!walk.walk(root_fd, "")) {
    if (walk.error) return unexpected(*walk.error);
    return unexpected(cancelled_error());
  }
  std::sort(walk.listing.files.begin(), walk.listing.files.end(),
            [](const SourceFile& a, const SourceFile& b) { return a.path < b.path; });
  return std::move(walk.listing);
}

}  // namespace tpurun::staging

#include "staging/file_list.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <unordered_map>

#include "staging/dir_cursor.hpp"
#include "staging/fs_util.hpp"

namespace tpurun::staging {
namespace {

// Decides .tpurunignore for git's sorted list, remembering directory verdicts
// (a file is ignored when any parent directory is).
class ListFilter {
 public:
  explicit ListFilter(const IgnoreRules& rules) : rules_(rules) {}

  bool ignored(std::string_view path) {
    if (rules_.empty()) return false;
    size_t slash = path.rfind('/');
    if (slash != std::string_view::npos && dir_ignored(path.substr(0, slash))) return true;
    return rules_.matches(path, false);
  }

 private:
  bool dir_ignored(std::string_view dir) {
    auto it = dirs_.find(std::string(dir));
    if (it != dirs_.end()) return it->second;
    size_t slash = dir.rfind('/');
    bool verdict = (slash != std::string_view::npos && dir_ignored(dir.substr(0, slash))) ||
                   rules_.matches(dir, true);
    dirs_.emplace(std::string(dir), verdict);
    return verdict;
  }

  const IgnoreRules& rules_;
  std::unordered_map<std::string, bool> dirs_;
};

struct GitEntry {
  std::string path;
  bool untracked = false;
};

// `git ls-files -t -z` records: "<tag> <path>", tag '?' for untracked files.
std::vector<GitEntry> parse_ls_files(const std::string& out) {
  std::vector<GitEntry> entries;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t end = out.find('\0', pos);
    if (end == std::string::npos) end = out.size();
    if (end - pos > 2 && out[pos + 1] == ' ') {
      GitEntry entry{out.substr(pos + 2, end - pos - 2), out[pos] == '?'};
      while (entry.path.size() > 1 && entry.path.back() == '/')
        entry.path.pop_back();  // nested repo
      entries.push_back(std::move(entry));
    }
    pos = end + 1;
  }
  std::sort(entries.begin(), entries.end(),
            [](const GitEntry& a, const GitEntry& b) { return a.path < b.path; });
  entries.erase(std::unique(entries.begin(), entries.end(),
                            [](const GitEntry& a, const GitEntry& b) { return a.path == b.path; }),
                entries.end());
  return entries;
}

}  // namespace

IgnoreRules load_ignore_rules(int root_fd) {
  IgnoreRules rules;
  UniqueFd fd(::openat(root_fd, ".tpurunignore", O_RDONLY | O_CLOEXEC));
  if (!fd) return rules;
  std::string text;
  char buffer[8192];
  ssize_t n;
  while ((n = ::read(fd.get(), buffer, sizeof buffer)) > 0)
    text.append(buffer, static_cast<size_t>(n));
  rules.add_text(text);
  return rules;
}

EntryKind classify_entry(int dir_fd, std::string_view name, SourceFile& file, int& error) {
  std::string name_z(name);
  struct stat st {};
  if (::fstatat(dir_fd, name_z.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) return EntryKind::missing;
    error = errno;
    return EntryKind::missing;
  }
  if (S_ISDIR(st.st_mode)) return EntryKind::directory;
  if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) return EntryKind::special;
  file.symlink = S_ISLNK(st.st_mode);
  file.executable = !file.symlink && (st.st_mode & S_IXUSR) != 0;
  file.stamp = {static_cast<std::uint64_t>(st.st_size), mtime_ns(st), ctime_ns(st),
                static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint32_t>(st.st_mode)};
  if (file.symlink) {
    char target[PATH_MAX];
    ssize_t n = ::readlinkat(dir_fd, name_z.c_str(), target, sizeof target);
    if (n < 0) {
      error = errno;
      return EntryKind::missing;
    }
    file.link_target.assign(target, static_cast<size_t>(n));
    file.stamp.size = 0;  // a symlink's bytes are its target, not content to store
  }
  return EntryKind::staged;
}

StageError cancelled_error() { return StageError{"staging cancelled; nothing was left behind"}; }

Result<SourceListing, StageError> list_git_files(const std::string& source_dir, int root_fd,
                                                 const IgnoreRules& rules, ProcessRunner& processes,
                                                 const CancelToken& cancel) {
  ProcessResult ls =
      processes.run({"git", "-C", source_dir, "ls-files", "-co", "--exclude-standard", "-z", "-t"});
  if (ls.exit_code != 0) {
    return unexpected(StageError{"git ls-files failed in " + source_dir + ": " +
                                 ls.err.substr(0, ls.err.find('\n'))});
  }
  SourceListing listing;
  ListFilter filter(rules);
  DirCursor dirs(root_fd, DirCursor::Use::read);
  for (GitEntry& entry : parse_ls_files(ls.out)) {
    if (cancel.cancelled()) return unexpected(cancelled_error());
    if (filter.ignored(entry.path)) continue;
    std::string_view name;
    int dir_fd = dirs.parent_of(entry.path, &name);
    if (dir_fd < 0) {
      if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
        continue;  // deleted in the work tree
      return unexpected(
          StageError{"cannot open the directory of " + entry.path + ": " + errno_text(errno)});
    }
    SourceFile file;
    int error = 0;
    switch (classify_entry(dir_fd, name, file, error)) {
      case EntryKind::staged:
        file.path = std::move(entry.path);
        listing.untracked += entry.untracked ? 1 : 0;
        listing.files.push_back(std::move(file));
        break;
      case EntryKind::directory:
        listing.notes.push_back("skipped " + entry.path +
                                ": a submodule or nested repository (stage it separately)");
        break;
      case EntryKind::special:
        listing.notes.push_back("skipped " + entry.path + ": not a regular file or symlink");
        break;
      case EntryKind::missing:
        if (error != 0)
          return unexpected(StageError{"cannot stat " + entry.path + ": " + errno_text(error)});
        break;  // listed by git but deleted in the work tree
    }
  }
  return listing;
}

}  // namespace tpurun::staging

#pragma once
// Which files go into a snapshot: git's view (tracked + untracked-not-ignored)
// in a repository, a walk otherwise; .tpurunignore applies in both cases.
#include <string>
#include <string_view>
#include <vector>

#include "staging/ignore_rules.hpp"
#include "staging/source_file.hpp"
#include "tpurun/staging/snapshot.hpp"
#include "tpurun/util/cancel.hpp"
#include "tpurun/util/result.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun::staging {

struct SourceListing {
  std::vector<SourceFile> files;   // regular files and symlinks, sorted by path
  std::size_t untracked = 0;       // files git does not track (they make the snapshot dirty)
  std::vector<std::string> notes;  // what was skipped and why
};

// The rules of <root>/.tpurunignore (none when there is no such file).
IgnoreRules load_ignore_rules(int root_fd);

Result<SourceListing, StageError> list_git_files(const std::string& source_dir, int root_fd,
                                                 const IgnoreRules& rules, ProcessRunner& processes,
                                                 const CancelToken& cancel);

// Outside git: everything but walk_defaults() (unless `defaults` is false:
// a published snapshot, read back whole) and the rules.
Result<SourceListing, StageError> walk_files(int root_fd, const IgnoreRules& rules,
                                             const CancelToken& cancel, bool defaults = true);

enum class EntryKind { staged, directory, special, missing };
// lstat's one directory entry into `file` (and reads a symlink's target).
// `error` is set for a failure that must stop staging (EACCES, EIO, ...).
EntryKind classify_entry(int dir_fd, std::string_view name, SourceFile& file, int& error);

StageError cancelled_error();

}  // namespace tpurun::staging

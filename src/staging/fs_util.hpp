#pragma once
#include "tpurun/util/duration.hpp"  // human_size
// Small POSIX helpers shared by the staging code: owned file descriptors,
// errno text, human sizes, and removing a tree without following symlinks.
#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tpurun/util/unique_fd.hpp"

namespace tpurun::staging {

using tpurun::UniqueFd;

std::string errno_text(int err);

// Opens a directory relative to `dir_fd` without following a symlink at the
// last component. Returns -1 with errno set on failure.
int open_dir_at(int dir_fd, const char* name);

// The names in a directory opened for reading (not O_PATH), sorted, without
// "." and ".."; empty when it cannot be read.
std::vector<std::string> list_dir_names(int dir_fd);

// The process umask, read without changing it (umask(2) would race with
// other threads creating files).
mode_t current_umask();

std::int64_t mtime_ns(const struct stat& st);
std::int64_t ctime_ns(const struct stat& st);

// Removes dir_fd/name recursively, never following symlinks. Directories are
// made user-writable first, since snapshots are read-only. Returns 0 or the
// first errno hit; `failed_path` then names the entry that could not go.
// Files with a single link add their size to *bytes_freed (when given).
int remove_tree_at(int dir_fd, const std::string& name, std::string* failed_path = nullptr,
                   std::uint64_t* bytes_freed = nullptr);

}  // namespace tpurun::staging

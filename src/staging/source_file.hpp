#pragma once
// One file of the project, as listed and stat'ed before staging.
#include <cstdint>
#include <string>

namespace tpurun::staging {

// What the stat cache keys on: any change to the file changes one of these.
struct FileStamp {
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  std::uint64_t inode = 0;
  std::uint32_t mode = 0;

  bool operator==(const FileStamp&) const = default;
};

struct SourceFile {
  std::string path;  // relative to the project root, '/'-separated, no "." or ".."
  bool symlink = false;
  bool executable = false;  // owner x bit; only meaningful for regular files
  FileStamp stamp;
  std::string link_target;  // symlinks only; recreated as is, never followed
};

}  // namespace tpurun::staging

#pragma once
// Replacing a small file whole: readers see the old text or the new, never a
// part. Used for run records and the supervisor's run state on the shared mount.
#include <string>

namespace tpurun {

// Writes `text` to `path`.tmp and renames it over `path`. Throws
// std::runtime_error naming the path when any step fails; the old file is
// then left as it was.
void write_file_atomic(const std::string& path, const std::string& text);

// The whole file, or "" when it cannot be read.
std::string read_small_file(const std::string& path);

}  // namespace tpurun

#pragma once
// Replacing a small file whole: readers see the old text or the new, never a
// part. Used for run records and the watcher's run state on the shared mount.
#include <string>

namespace tpurun {

// Writes `text` to a new, uniquely named temp file beside `path` (O_EXCL,
// O_NOFOLLOW; mode 0666 narrowed by the umask), checks write, fsync and
// close, then renames it over `path`. Throws std::runtime_error naming the
// path when any step fails; the temp is then removed and the old file is
// left as it was (a short write is never renamed into place).
void write_file_atomic(const std::string& path, const std::string& text);

// The whole file, or "" when it cannot be read.
std::string read_small_file(const std::string& path);
// The same for `name` in the directory `dir_fd` (no symlink followed).
std::string read_small_file_at(int dir_fd, const std::string& name);
// The same, with `path`'s directory opened first: on NFS that revalidates
// the directory (close-to-open), so a file another host created since is
// found rather than a cached "no such file" (state.json, stop markers).
std::string read_small_file_fresh(const std::string& path);

}  // namespace tpurun

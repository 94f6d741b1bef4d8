// read_snapshot: a snapshot's dir listed whole (no ignore rules: the stage
// chose its files already) and every file hashed again.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "staging/content_hash.hpp"
#include "staging/file_list.hpp"
#include "staging/fs_util.hpp"
#include "staging/snapshot_build.hpp"
#include "tpurun/staging/snapshot.hpp"
#include "tpurun/util/unique_fd.hpp"

namespace tpurun {
namespace staging {
namespace {

Result<ContentHash, StageError> hash_file(int dir_fd, const std::string& path, Hasher& hasher,
                                          std::vector<char>& buffer) {
  UniqueFd fd(::openat(dir_fd, path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return unexpected(StageError{"cannot read " + path + ": " + errno_text(errno)});
  hasher.reset();
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return unexpected(StageError{"cannot read " + path + ": " + errno_text(errno)});
    if (n == 0) break;
    hasher.update(buffer.data(), static_cast<std::size_t>(n));
  }
  return hasher.digest();
}

}  // namespace
}  // namespace staging

Result<StagedSnapshot, StageError> read_snapshot(const std::string& dir, const CancelToken& cancel) {
  using staging::ContentHash, staging::SourceFile;
  UniqueFd root(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) return unexpected(StageError{"cannot open the snapshot " + dir + ": " + staging::errno_text(errno)});
  auto listing = staging::walk_files(root.get(), staging::IgnoreRules{}, cancel, false);
  if (!listing) return unexpected(listing.error());
  const std::vector<SourceFile>& files = listing->files;
  std::vector<ContentHash> hashes(files.size());
  staging::Hasher hasher;
  std::vector<char> buffer(1 << 20);
  StagedSnapshot staged;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (cancel.cancelled()) return unexpected(staging::cancelled_error());
    if (files[i].symlink) continue;
    auto hash = staging::hash_file(root.get(), files[i].path, hasher, buffer);
    if (!hash) return unexpected(hash.error());
    hashes[i] = *hash;
    staged.bytes += files[i].stamp.size;
  }
  staged.dir = dir;
  staged.name = std::filesystem::path(dir).filename().string();
  staged.tree_hash = staging::tree_hash(files, hashes).hex();
  staged.files = files.size();
  staged.bytes_reused = staged.bytes;
  staged.reused = true;
  staged.entries = staging::entries_of(files, hashes);
  return staged;
}

}  // namespace tpurun

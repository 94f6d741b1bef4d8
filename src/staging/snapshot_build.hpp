#pragma once
// Fills the hidden temp dir of a snapshot with the listed files (a few
// threads, each placing runs of consecutive files), then makes it read-only.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "staging/content_hash.hpp"
#include "staging/object_store.hpp"
#include "staging/source_file.hpp"
#include "tpurun/staging/snapshot.hpp"
#include "tpurun/util/cancel.hpp"
#include "tpurun/util/result.hpp"

namespace tpurun::staging {

struct TreeInput {
  const std::vector<SourceFile>& files;  // sorted by path
  int source_fd;
  int tree_fd;  // the hidden temp dir
  ObjectStore& store;
  const std::vector<std::optional<ContentHash>>& known;  // per file, from the stat cache
  const CancelToken& cancel;
  const std::function<void(const SnapshotProgress&)>& progress;
  unsigned threads = 1;
  bool defer_store = false;  // see FilePlacer
};

struct FilledTree {
  std::vector<ContentHash> hashes;  // per file; zero for symlinks
  std::vector<char> pending;        // per file: copied in, not yet in the store (defer_store)
  std::vector<std::uint64_t> sizes;  // per file: the bytes placed (at most the listed size)
  std::vector<char> changed;         // per file: it changed while it was read (Placed::changed)
  std::size_t files_read = 0;
  std::uint64_t bytes = 0;
  std::uint64_t bytes_reused = 0;
};

// On error the tree is left as is; the caller removes it.
Result<FilledTree, StageError> fill_tree(const TreeInput& input);

// Takes the write bits off every directory (files are read-only objects
// already); the umask decided the rest. 0 or errno.
int make_read_only(int tree_fd, const std::vector<SourceFile>& files);

// XXH3-128 over the sorted (path, mode, content hash or link target) list.
ContentHash tree_hash(const std::vector<SourceFile>& files, const std::vector<ContentHash>& hashes);

// What a worker without the shared mount rebuilds (staging/push.hpp). sizes:
// per file, what was placed (FilledTree::sizes); without, the listed sizes.
std::vector<SnapshotEntry> entries_of(const std::vector<SourceFile>& files, const std::vector<ContentHash>& hashes,
                                      const std::vector<std::uint64_t>* sizes = nullptr);

}  // namespace tpurun::staging

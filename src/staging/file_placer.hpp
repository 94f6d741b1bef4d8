#pragma once
// Puts one source file into the snapshot tree being built: a hard link to its
// object when the stat cache knows the content, otherwise one pass over the
// bytes that reads, hashes and writes them, after which the new file becomes
// the object (or is swapped for a link to the object someone stored before),
// now or, with defer_store, later (staging/adoption.hpp).
// One placer per thread; files must come in sorted order.
#include <memory>
#include <optional>

#include "staging/content_hash.hpp"
#include "staging/dir_cursor.hpp"
#include "staging/object_store.hpp"
#include "staging/source_file.hpp"
#include "tpurun/staging/snapshot.hpp"
#include "tpurun/util/result.hpp"

namespace tpurun::staging {

struct Placed {
  ContentHash hash;     // zero for symlinks
  bool read = false;    // the content was read (stat cache miss)
  bool reused = false;  // the content was in the object store already
  bool pending = false;  // a new copy, to be linked into the store later (defer_store)
  std::uint64_t bytes = 0;
  // The file changed while it was read (it ended early, or its size or
  // mtime moved): what was read is staged, at most the listed size.
  bool changed = false;
};

class FilePlacer {
 public:
  // defer_store: a file copied in is left out of the object store (Placed::
  // pending), for adopt_pending to link in later.
  FilePlacer(int source_fd, int tree_fd, ObjectStore& store, bool defer_store = false);
  // `known`: the content hash, when the stat cache has it.
  Result<Placed, StageError> place(const SourceFile& file, const std::optional<ContentHash>& known);

 private:
  Result<Placed, StageError> place_known(const SourceFile& file, const ContentHash& hash,
                                         int dir_fd, const char* name, bool* missing);
  // store_checked: the object was just looked for (place_known).
  Result<Placed, StageError> copy_in(const SourceFile& file, int dir_fd, const char* name,
                                     bool store_checked);
  int open_source(const SourceFile& file);

  DirCursor sources_;
  DirCursor targets_;
  ObjectStore& store_;
  std::unique_ptr<char[]> buffer_;
  Hasher hasher_;
  mode_t umask_;
  bool defer_store_;
};

StageError write_error(const std::string& path, int err);

}  // namespace tpurun::staging

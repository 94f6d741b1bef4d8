#pragma once
// Object-store links after the fact. On a network file system every link into
// the store is a round trip or two (and FUSE adds a lookup and attribute
// refreshes), so a stage there copies its new files into the snapshot only
// and writes down which they were: a pending list in the user's local cache
// (<cache>/adopt/<snapshot>.list). `tpurun _adopt`, started once the jobs
// are launched, links them into the store; the next stage finishes whatever
// is left before it needs the store (adopt_pending in tpurun/staging.hpp).
//
// A list is only an optimisation: one that is lost leaves its files as
// unshared copies, which the next stage copies again and stores then.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "staging/content_hash.hpp"

namespace tpurun::staging {

struct PendingFile {
  std::string path;  // relative, inside the snapshot
  ContentHash hash;
  bool executable = false;
};

struct PendingList {
  std::string staging_root;  // as configured (the stage's request)
  std::string user;
  std::string snapshot;  // its name under <staging_root>/<user>
  std::vector<PendingFile> files;
};

// NUL-separated fields: a version line, the three names, then per file
// "<32 hex><x|->" and the path. Paths cannot hold a NUL.
std::string encode_pending_list(const PendingList& list);
// Nothing when the text is not a list this version wrote, or a path is not a
// plain relative one (absolute, empty, ".", ".." components).
std::optional<PendingList> decode_pending_list(std::string_view text);

// Writes the list as <dir>/<snapshot>.list (dir made 0700 if missing),
// atomically: an adopter sees the whole list or none. "" or what failed.
std::string write_pending_list(const std::string& dir, const PendingList& list);

}  // namespace tpurun::staging

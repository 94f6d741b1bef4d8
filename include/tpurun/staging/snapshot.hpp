#pragma once
// Code snapshots: an immutable, content-addressed copy of the project on the
// staging root, built atomically so it is whole or absent.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/util/cancel.hpp"
#include "tpurun/util/result.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {

struct SnapshotRequest {
  std::string source_dir;     // the project directory on the dev VM
  std::string staging_root;   // shared; snapshots go to <staging_root>/<user>/<name>
  std::string user;
  // The user's home: staging it (not a project) leaves out what no worker
  // should get, home_secret_rules() in staging/ignore_rules.
  std::string home_dir;
  std::uint64_t size_limit = 1ull << 30;
  std::string stat_cache_dir;  // local cache of (path,size,mtime,inode) -> hash; empty: no cache
  std::chrono::system_clock::time_point now;
  std::function<std::string()> random_suffix;  // 6 chars [a-z0-9]; injected for tests
  // Threads placing files; 0: 8. On NFS each create and link is a round trip,
  // so threads mostly wait and hide latency; on a local disk they were neutral
  // even on 2 cores (bench/stage.sh).
  unsigned threads = 0;
  // Called once the tree is built, just before it is renamed into place: stage
  // builds it while the workers' preflight runs and publishes it only if the
  // preflight passed. false discards the tree (a refused stage leaves no
  // snapshot). Unset: publish.
  std::function<bool()> publish_gate;
  // Non-empty: the files this stage copies in join the object store later, not
  // during the stage (on NFS each link is a round trip or two): their list is
  // left in this local dir for adopt_pending. Before the stage needs the
  // store, it finishes the lists it finds there (waiting for an adopter).
  std::string adopt_dir;
};

struct SnapshotProgress {
  std::size_t files_done = 0;
  std::size_t files_total = 0;
  std::uint64_t bytes_done = 0;
  std::uint64_t bytes_total = 0;
  std::uint64_t bytes_reused = 0;  // content already in the object store
};

struct GitInfo {
  bool is_repo = false;
  std::string sha;     // full sha of HEAD; empty outside git
  std::string branch;  // empty when detached or outside git
  bool dirty = false;
  std::string diff;    // `git diff HEAD` (uncommitted changes, staged or not)
};

// One file of a snapshot, as a worker without the shared mount rebuilds it
// (staging/push.hpp): its object in the store, or a symlink's target.
struct SnapshotEntry {
  std::string path;  // relative, '/'-separated
  bool symlink = false;
  bool executable = false;
  std::uint64_t size = 0;
  std::string object;       // "ab/cdef...[.x]" in the object store; "" for a symlink
  std::string link_target;  // symlinks only
};

struct StagedSnapshot {
  std::string dir;        // final absolute path, read-only
  std::string name;       // e.g. 240419000859-u1fe8t-2df5ac0-code
  GitInfo git;
  std::string tree_hash;  // xxh3-128 over the sorted (path, mode, content hash) list
  std::size_t files = 0;
  std::uint64_t bytes = 0;
  std::uint64_t bytes_reused = 0;
  std::size_t files_read = 0;  // files whose content had to be read (stat cache misses)
  std::vector<std::string> notes;  // what was skipped and why (submodules, special files, cache trouble)
  bool reused = false;             // an existing snapshot of the same tree (nothing written)
  bool adoption_pending = false;   // its new files are listed in adopt_dir, not yet stored
  std::vector<SnapshotEntry> entries;  // every file, in the order listed
};

struct StageError {
  std::string message;  // names the file and what to do
};

// Builds the snapshot: lists files (git's rules + .tpurunignore, or a walk
// outside git), enforces the size limit (error lists the largest offenders),
// hashes into the per-user object store, hard-links (or copies) into a hidden
// temp dir, renames it into place and makes it read-only. On any failure or
// cancel, nothing of the snapshot remains.
Result<StagedSnapshot, StageError> create_snapshot(
    const SnapshotRequest& request, ProcessRunner& processes, const CancelToken& cancel,
    const std::function<void(const SnapshotProgress&)>& progress = {});

// A published snapshot read back from its dir (read-only, so it is what was
// staged): its files hashed again, its entries and tree hash. The watcher of
// a run on a pod with no shared mount pushes it again to a recreated TPU VM,
// whose new disk has none of it. `name` is the dir's last part.
Result<StagedSnapshot, StageError> read_snapshot(const std::string& dir, const CancelToken& cancel);

}  // namespace tpurun

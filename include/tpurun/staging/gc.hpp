#pragma once
// tpurun gc: the user's old snapshots and the content nothing links to.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tpurun {
// A run that may still use a snapshot (see run_is_active in runs/watcher/records_verdict.hpp).
struct SnapshotUser {
  std::string run_id;
  std::string state;  // "running", "restarting", ...
};

struct GcRequest {
  std::string staging_root;
  std::string user;  // only <staging_root>/<user> is ever touched
  std::chrono::seconds older_than{14 * 24 * 3600};
  std::chrono::system_clock::time_point now;
  bool dry_run = false;
  // Snapshot name -> the runs that may still use it; these are never removed.
  std::map<std::string, std::vector<SnapshotUser>> in_use;
  // No shared mount: the user's runs ("PROJECT/RUN") whose log dirs on the
  // workers' own disks may go once older than the cutoff: ended, and whole
  // here (runs_copied_whole). Every other run's stay.
  std::vector<std::string> worker_runs_done;
};

struct KeptSnapshot {
  std::string name;
  std::vector<SnapshotUser> runs;  // empty: a stage pins it (it is being sent or launched)
};

struct GcReport {
  std::vector<std::string> snapshots_removed;  // (or that would be, with dry_run)
  std::vector<std::string> temps_removed;      // leftovers of interrupted stagings (.tmp-*, .objects/tmp/*)
  std::vector<KeptSnapshot> kept;              // old enough, but a run may still use them, or a stage pins them
  std::size_t objects_removed = 0;
  std::uint64_t bytes_freed = 0;
  std::vector<std::string> errors;
  // Set when <staging_root>/<user> cannot be used at all (not the caller's,
  // a symlink, writable by others, no root): why, and how to fix it.
  std::string refused;
};

// Removes the user's snapshots older than the cutoff (by the newer of the
// directory's mtime and the time in its name) that no run in `in_use` may
// still use, temp dirs of stagings that died over an hour ago, then objects
// nothing links to. Never follows a symlink, never leaves
// <staging_root>/<user>, and touches nothing when that is not the caller's own
// directory (see safe_dir.hpp): the error then says why and how to fix it.
GcReport collect_garbage(const GcRequest& request);

}  // namespace tpurun

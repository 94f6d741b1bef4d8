#pragma once
// On a network file system a stage links its new files into the object store
// after the launch: the list it leaves, and `tpurun _adopt`, which works
// through it (adoption.hpp writes the lists).
#include <cstddef>
#include <string>
#include <vector>

#include "tpurun/util/cancel.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {
// What adopt_pending did. Each list is finished (and removed) or given up.
struct AdoptReport {
  std::size_t lists = 0;   // lists finished
  std::size_t stored = 0;  // files linked into their object store
  std::size_t kept = 0;    // left unshared: the object was there already, or links are refused
  std::size_t gone = 0;    // no longer there (the snapshot was collected)
  std::size_t busy = 0;    // lists another adopter holds (AdoptBusy::skip)
  std::vector<std::string> errors;  // one per list given up, naming it and why
};

enum class AdoptBusy { skip, wait };

// Links the files that stages with adopt_dir set left out of the object
// store into it, list by list, and removes each list. A list that another
// process is adopting is skipped or waited for (until `cancel`); a list whose
// snapshot is gone is dropped. Files in published snapshots are never
// replaced: content someone stored meanwhile stays a second copy.
AdoptReport adopt_pending(const std::string& adopt_dir, AdoptBusy busy, const CancelToken& cancel);

// Where a stage on a network file system leaves the list of files it did not
// link into the object store (SnapshotRequest::adopt_dir): the user's local
// cache. `tpurun _adopt` (started after the launch) works through it.
std::string pending_adoptions_dir(const Environment& env);

}  // namespace tpurun

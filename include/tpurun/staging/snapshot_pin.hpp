#pragma once
// A stage's hold on the snapshot it sends and launches: a shared flock(2) on
// the snapshot's directory, kept from the moment the snapshot is ready until
// the stage lets it go. `tpurun gc` removes a snapshot only under an
// exclusive lock of it, so it keeps a pinned one whatever its age (issue 37:
// `gc --older-than 0s` during a push removed the snapshot being sent). The
// locks are the kernel's, between processes of this host, where gc and stage
// both run; a filesystem that refuses flock pins nothing (gc then decides by
// age, as before).
#include <string>

#include "tpurun/util/unique_fd.hpp"

namespace tpurun {

class SnapshotPin {
 public:
  SnapshotPin() = default;
  // Pins the snapshot at `dir`. Not held when the dir cannot be opened or
  // locked; gone() when it was removed before the pin took.
  explicit SnapshotPin(const std::string& dir);

  bool held() const { return static_cast<bool>(fd_); }
  bool gone() const { return gone_; }

 private:
  UniqueFd fd_;  // closing it lets the lock go
  bool gone_ = false;
};

// gc's side: an exclusive lock of the snapshot `name` in `dir_fd`, held
// while it is removed. pinned() when a stage holds it.
class SnapshotRemovalLock {
 public:
  SnapshotRemovalLock(int dir_fd, const std::string& name);

  bool pinned() const { return pinned_; }

 private:
  UniqueFd fd_;
  bool pinned_ = false;
};

}  // namespace tpurun

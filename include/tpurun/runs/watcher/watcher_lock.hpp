#pragma once
// One watcher per run and host: `tpurun _watcher` takes a flock on
// <cache dir>/watchers/RUN.lock first, and a second watcher of the run exits
// at once. The holder removes the file when it ends.
#include <string>

#include "tpurun/util/system.hpp"

namespace tpurun {

class WatcherLock {
 public:
  // Takes the lock of run `run_id` in the user's cache dir (made if missing).
  WatcherLock(const std::string& run_id, const Environment& env);
  ~WatcherLock();  // removes the file while still holding it, then lets go
  WatcherLock(const WatcherLock&) = delete;
  WatcherLock& operator=(const WatcherLock&) = delete;

  bool held() const { return fd_ >= 0; }
  // Another watcher of the run holds it.
  bool held_elsewhere() const { return held_elsewhere_; }
  // Neither held nor held elsewhere: why the file could not be locked.
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool held_elsewhere_ = false;
  std::string error_;
};

}  // namespace tpurun

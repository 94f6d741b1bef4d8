// SnapshotPin and SnapshotRemovalLock: flocks on a snapshot's dir (snapshot_pin.hpp).
#include "tpurun/staging/snapshot_pin.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <utility>

namespace tpurun {

SnapshotPin::SnapshotPin(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) {
    gone_ = errno == ENOENT;
    return;
  }
  if (::flock(fd.get(), LOCK_SH) != 0) return;
  // gc may have removed it between the open and the lock (it removes under
  // its exclusive lock): the path no longer names the dir we hold.
  struct stat held {}, now {};
  if (::fstat(fd.get(), &held) != 0 || ::stat(dir.c_str(), &now) != 0 || held.st_ino != now.st_ino ||
      held.st_dev != now.st_dev) {
    gone_ = true;
    return;
  }
  fd_ = std::move(fd);
}

SnapshotRemovalLock::SnapshotRemovalLock(int dir_fd, const std::string& name)
    : fd_(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)) {
  if (fd_ && ::flock(fd_.get(), LOCK_EX | LOCK_NB) != 0) pinned_ = errno == EWOULDBLOCK;
}

}  // namespace tpurun

// SnapshotPin and SnapshotRemovalLock: flocks on a snapshot's dir (snapshot_pin.hpp).
#include "tpurun/staging/snapshot_pin.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace tpurun {

SnapshotPin::SnapshotPin(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    gone_ = errno == ENOENT;
    return;
  }
  if (::flock(fd, LOCK_SH) != 0) {
    ::close(fd);
    return;
  }
  // gc may have removed it between the open and the lock (it removes under
  // its exclusive lock): the path no longer names the dir we hold.
  struct stat held {}, now {};
  if (::fstat(fd, &held) != 0 || ::stat(dir.c_str(), &now) != 0 || held.st_ino != now.st_ino ||
      held.st_dev != now.st_dev) {
    ::close(fd);
    gone_ = true;
    return;
  }
  fd_ = fd;
}

SnapshotPin::SnapshotPin(SnapshotPin&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), gone_(other.gone_) {}

SnapshotPin& SnapshotPin::operator=(SnapshotPin&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    gone_ = other.gone_;
  }
  return *this;
}

SnapshotPin::~SnapshotPin() {
  if (fd_ >= 0) ::close(fd_);  // closing the last fd lets the lock go
}

SnapshotRemovalLock::SnapshotRemovalLock(int dir_fd, const std::string& name) {
  fd_ = ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd_ >= 0 && ::flock(fd_, LOCK_EX | LOCK_NB) != 0) pinned_ = errno == EWOULDBLOCK;
}

SnapshotRemovalLock::~SnapshotRemovalLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace tpurun

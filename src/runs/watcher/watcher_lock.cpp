#include "tpurun/runs/watcher/watcher_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "tpurun/util/identity.hpp"

namespace tpurun {

// The holder removes the file when it ends, so a lock taken on a file that
// was removed meanwhile (its inode is no longer the path's) is let go and
// taken again on the path's new file.
WatcherLock::WatcherLock(const std::string& run_id, const Environment& env) {
  const std::string dir = cache_dir(env) + "/watchers";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  path_ = dir + "/" + run_id + ".lock";
  for (int tries = 0; tries < 10; ++tries) {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      error_ = std::strerror(errno);
      return;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      held_elsewhere_ = true;
      return;
    }
    struct stat held {}, now {};
    if (::fstat(fd, &held) == 0 && ::stat(path_.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
        held.st_dev == now.st_dev) {
      fd_ = fd;
      return;
    }
    ::close(fd);  // the last watcher removed it between our open and our lock
  }
  error_ = "the lock file keeps being replaced";
}

WatcherLock::~WatcherLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still holding it: see the constructor
  ::close(fd_);
}

}  // namespace tpurun

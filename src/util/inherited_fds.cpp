#include "util/inherited_fds.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

// TPURUN_HAVE_CLOSEFROM and TPURUN_HAVE_SPAWN_CLOSEFROM come from the feature
// tests in CMakeLists.txt (glibc >= 2.34).

namespace tpurun {
namespace {

constexpr int kFirst = 3;  // above stderr

#if !defined(TPURUN_HAVE_CLOSEFROM) || !defined(TPURUN_HAVE_SPAWN_CLOSEFROM)

// The highest descriptor number worth trying when /proc is not mounted.
int descriptor_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1 << 20)) return 1 << 20;
  return static_cast<int>(rl.rlim_cur);
}

// Calls f(fd) for each descriptor >= kFirst listed in /proc/self/fd, reading
// the directory with getdents64 into a stack buffer: no allocation, so it is
// safe after fork. Returns false when /proc/self/fd cannot be read.
template <typename F>
bool for_each_open_fd(F f) {
  const int dir = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return false;
  alignas(8) char buf[4096];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
      unsigned short reclen;
      std::memcpy(&reclen, buf + off + 16, sizeof reclen);
      const char* name = buf + off + 19;
      off += reclen;
      int fd = 0;
      bool number = *name != '\0';
      for (const char* c = name; *c; ++c) {
        if (*c < '0' || *c > '9') number = false;
        fd = fd * 10 + (*c - '0');
      }
      // Closing while reading is fine: /proc lists descriptors by number.
      if (number && fd >= kFirst && fd != dir) f(fd);
    }
  }
  ::close(dir);
  return true;
}
#endif

}  // namespace

void close_inherited_on_spawn(posix_spawn_file_actions_t& actions) {
#ifdef TPURUN_HAVE_SPAWN_CLOSEFROM
  posix_spawn_file_actions_addclosefrom_np(&actions, kFirst);
#else
  // glibc ignores a close action on a descriptor that is no longer open, so a
  // snapshot that another thread outdates is harmless.
  if (!for_each_open_fd([&](int fd) { posix_spawn_file_actions_addclose(&actions, fd); })) {
    const int limit = descriptor_limit();
    for (int fd = kFirst; fd < limit; ++fd) {
      if (::fcntl(fd, F_GETFD) >= 0) posix_spawn_file_actions_addclose(&actions, fd);
    }
  }
#endif
}

void close_inherited_fds() noexcept {
#ifdef TPURUN_HAVE_CLOSEFROM
  ::closefrom(kFirst);
#else
  if (!for_each_open_fd([](int fd) { ::close(fd); })) {
    const int limit = descriptor_limit();
    for (int fd = kFirst; fd < limit; ++fd) ::close(fd);
  }
#endif
}

}  // namespace tpurun

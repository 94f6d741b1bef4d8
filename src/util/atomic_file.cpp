#include "tpurun/util/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "tpurun/util/unique_fd.hpp"
#include "util/atomic_file_io.hpp"

namespace tpurun {
namespace detail {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  std::string hint = err == ENOSPC || err == EDQUOT ? " (free space, or raise the quota)" : "";
  throw std::runtime_error(fmt::format("cannot {} {}: {}{}", what, path, std::strerror(err), hint));
}

// Writes all of `text`; 0 or errno. A write that makes no progress is ENOSPC.
int write_all(int fd, const std::string& text, const FileIo& io) {
  for (size_t done = 0; done < text.size();) {
    ssize_t n = io.write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return ENOSPC;
    done += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& text, const FileIo& io) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  // Temp and final name both relative to one directory fd: the rename cannot
  // land anywhere else, whatever happens to the path meanwhile.
  UniqueFd dir_fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) fail("open the directory of", path, errno);
  std::string temp;
  UniqueFd fd;
  std::random_device random;
  for (int attempt = 0; !fd; ++attempt) {
    temp = fmt::format(".{}.tmp-{}-{:08x}", base, ::getpid(), random());
    fd.reset(::openat(dir_fd.get(), temp.c_str(),
                      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666));
    if (!fd && (errno != EEXIST || attempt == 10)) fail("create a temp file for", path, errno);
  }
  // Whatever fails, the temp goes and the old file stays. On NFS, ENOSPC
  // and EDQUOT often show only at fsync or close, so both are checked.
  int err = write_all(fd.get(), text, io);
  if (err == 0 && io.fsync(fd.get()) != 0) err = errno;
  if (io.close(fd.release()) != 0 && err == 0) err = errno;
  if (err == 0 && ::renameat(dir_fd.get(), temp.c_str(), dir_fd.get(), base.c_str()) != 0) {
    err = errno;
    ::unlinkat(dir_fd.get(), temp.c_str(), 0);
    fail("rename a temp file over", path, err);
  }
  if (err != 0) {
    ::unlinkat(dir_fd.get(), temp.c_str(), 0);
    fail("write", path, err);
  }
}

}  // namespace detail

void write_file_atomic(const std::string& path, const std::string& text) {
  detail::write_file_atomic(path, text, detail::FileIo{});
}

std::string read_small_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string read_small_file_at(int dir_fd, const std::string& name) {
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return "";
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > (1u << 24)) break;  // small files only
  }
  return text;
}

std::string read_small_file_fresh(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) return read_small_file(path);
  return read_small_file_at(dir_fd.get(), path.substr(slash + 1));
}

}  // namespace tpurun

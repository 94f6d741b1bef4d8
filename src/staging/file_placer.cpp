#include "staging/file_placer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

namespace tpurun::staging {
namespace {

constexpr size_t kBufferSize = 1 << 20;

// O_NOATIME is refused (EPERM) for files we do not own; then we stop asking.
std::atomic<bool> noatime_allowed{true};

mode_t object_mode(const SourceFile& file) { return file.executable ? 0555 : 0444; }

StageError read_error(const std::string& path, int err) {
  return StageError{"cannot read " + path + ": " + errno_text(err) +
                    " (fix its permissions, or list it in .tpurunignore)"};
}

bool is_unlinkable(int err) { return err == EMLINK || err == EXDEV || err == EPERM; }

}  // namespace

StageError write_error(const std::string& path, int err) {
  std::string hint = err == ENOSPC || err == EDQUOT
                         ? " (free space on the staging root, e.g. with tpurun gc)"
                         : "";
  return StageError{"cannot write " + path + " into the snapshot: " + errno_text(err) + hint};
}

FilePlacer::FilePlacer(int source_fd, int tree_fd, ObjectStore& store, bool defer_store)
    : sources_(source_fd, DirCursor::Use::read),
      targets_(tree_fd, DirCursor::Use::build),
      store_(store),
      buffer_(new char[kBufferSize]),
      umask_(current_umask()),
      defer_store_(defer_store) {}

Result<Placed, StageError> FilePlacer::place(const SourceFile& file,
                                             const std::optional<ContentHash>& cached) {
  std::string_view base;
  int dir_fd = targets_.parent_of(file.path, &base);
  if (dir_fd < 0) return unexpected(write_error(file.path, errno));
  std::string name(base);
  if (file.symlink) {
    if (::symlinkat(file.link_target.c_str(), dir_fd, name.c_str()) != 0) {
      return unexpected(write_error(file.path, errno));
    }
    return Placed{};
  }
  // Empty files need no reading: their hash is known.
  static const ContentHash empty = hash_bytes("");
  std::optional<ContentHash> known = file.stamp.size == 0 ? empty : cached;
  if (known) {
    bool missing = false;
    auto placed = place_known(file, *known, dir_fd, name.c_str(), &missing);
    if (!missing) return placed;
  }
  return copy_in(file, dir_fd, name.c_str(), known.has_value());
}

// The content is known: link its object. *missing when the store lacks it.
Result<Placed, StageError> FilePlacer::place_known(const SourceFile& file, const ContentHash& hash,
                                                   int dir_fd, const char* name, bool* missing) {
  ObjectName object(hash, file.executable);
  int err = store_.link_out(object, dir_fd, name);
  if (is_unlinkable(err)) {
    err = store_.copy_out(object, dir_fd, name);
    if (err == 0) store_.adopt(dir_fd, name, object);  // on EMLINK this copy takes over the name
  }
  if (err == ENOENT) {
    *missing = true;  // collected by gc, or never stored: read the file after all
    return Placed{};
  }
  if (err != 0) return unexpected(write_error(file.path, err));
  return Placed{hash, false, true, false, file.stamp.size};
}

int FilePlacer::open_source(const SourceFile& file) {
  std::string_view base;
  int dir_fd = sources_.parent_of(file.path, &base);
  if (dir_fd < 0) return -1;
  std::string name(base);
  int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC;
  if (noatime_allowed.load(std::memory_order_relaxed)) {
    int fd = ::openat(dir_fd, name.c_str(), flags | O_NOATIME);
    if (fd >= 0 || errno != EPERM) return fd;
    noatime_allowed = false;
  }
  return ::openat(dir_fd, name.c_str(), flags);
}

// Whether the file read from fd still is as listed: a file that grows,
// shrinks or is rewritten while it is read is staged as read, and said so.
static bool changed_since_listed(int fd, const SourceFile& file, std::uint64_t read) {
  struct stat st {};
  if (read != file.stamp.size || ::fstat(fd, &st) != 0) return true;
  return static_cast<std::uint64_t>(st.st_size) != file.stamp.size ||
         st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec != file.stamp.mtime_ns;
}

// One pass over the bytes: read, hash, write into the snapshot; then store.
// At most the listed size is read: the size that was checked against the
// stage's size limit, the same bytes on every worker, even of a file that
// grows meanwhile.
// (An empty file is not even opened: there is nothing to read.) With
// defer_store, a file that fits in one read is hashed before anything is
// written, and linked from the store when its content is there already
// (a file read again, or the same bytes under another name): a lookup,
// instead of a copy that could no longer be swapped for the object once the
// snapshot is published.
Result<Placed, StageError> FilePlacer::copy_in(const SourceFile& file, int dir_fd, const char* name,
                                               bool store_checked) {
  UniqueFd source(file.stamp.size == 0 ? -1 : open_source(file));
  if (!source && file.stamp.size != 0) return unexpected(read_error(file.path, errno));
  UniqueFd target;
  hasher_.reset();
  bool changed = false;
  std::uint64_t total = 0;
  for (bool at_end = !source; ;) {
    ssize_t n = 0;
    if (!at_end) {
      const auto want = static_cast<size_t>(std::min<std::uint64_t>(kBufferSize, file.stamp.size - total));
      n = ::read(source.get(), buffer_.get(), want);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return unexpected(read_error(file.path, errno));
      hasher_.update(buffer_.get(), static_cast<size_t>(n));
      total += static_cast<std::uint64_t>(n);
      at_end = n == 0 || total >= file.stamp.size;
    }
    if (!target) {
      if (at_end && defer_store_ && !store_checked) {
        const ContentHash hash = hasher_.digest();
        if (store_.link_out(ObjectName(hash, file.executable), dir_fd, name) == 0)
          return Placed{hash, bool(source), true, false, total,
                        source && changed_since_listed(source.get(), file, total)};
      }
      target.reset(::openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, object_mode(file)));
      if (!target) return unexpected(write_error(file.path, errno));
    }
    for (ssize_t done = 0; done < n;) {
      ssize_t w = ::write(target.get(), buffer_.get() + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return unexpected(write_error(file.path, errno));
      done += w;
    }
    if (at_end) {
      if (source) changed = changed_since_listed(source.get(), file, total);
      break;
    }
  }
  // The umask narrows the object's mode (open did that); only when it would
  // take the owner's own read (or exec) bit are those given back.
  if ((umask_ & 0500) != 0) {
    mode_t mode = (object_mode(file) & ~umask_) | (object_mode(file) & 0500);
    if (::fchmod(target.get(), mode) != 0) return unexpected(write_error(file.path, errno));
  }
  if (::close(target.release()) != 0) return unexpected(write_error(file.path, errno));
  ContentHash hash = hasher_.digest();
  if (defer_store_) return Placed{hash, bool(source), false, true, total, changed};
  auto adopted = store_.adopt(dir_fd, name, ObjectName(hash, file.executable));
  if (!adopted) return unexpected(write_error(file.path, adopted.error()));
  return Placed{hash, bool(source), *adopted == ObjectStore::Adopted::shared, false, total, changed};
}

}  // namespace tpurun::staging

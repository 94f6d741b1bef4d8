#include "staging/object_store.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace tpurun::staging {
namespace {

// Unique within the host: pid and thread, then a counter.
std::string unique_name(std::string_view prefix) {
  static std::atomic<unsigned> counter{0};
  return fmt::format("{}{}-{}-{}", prefix, ::getpid(), ::gettid(), counter.fetch_add(1));
}

int copy_fd(int from, int to) {
  for (;;) {
    ssize_t n = ::copy_file_range(from, nullptr, to, nullptr, 1 << 30, 0);
    if (n == 0) return 0;
    if (n > 0) continue;
    if (errno == EINTR) continue;
    if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) return errno;
    break;  // not supported here: copy through a buffer
  }
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(from, buffer, sizeof buffer);
    if (n == 0) return 0;
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    for (ssize_t done = 0; done < n;) {
      ssize_t w = ::write(to, buffer + done, static_cast<size_t>(n - done));
      if (w < 0) {
        if (errno == EINTR) continue;
        return errno;
      }
      done += w;
    }
  }
}

}  // namespace

Result<ObjectStore, std::string> ObjectStore::open(const SafeDir& user_dir) {
  auto objects = open_own_dir(user_dir, ".objects", Create::if_missing);
  if (!objects) return unexpected(objects.error().message());
  auto tmp = open_own_dir(*objects, "tmp", Create::if_missing);
  if (!tmp) return unexpected(tmp.error().message());
  return ObjectStore(std::move(objects->fd));
}

ObjectName::ObjectName(const ContentHash& hash, bool executable) {
  static constexpr char digits[] = "0123456789abcdef";
  char hex[32];
  for (int i = 0; i < 16; ++i) {
    hex[i] = digits[(hash.high >> (60 - 4 * i)) & 0xf];
    hex[16 + i] = digits[(hash.low >> (60 - 4 * i)) & 0xf];
  }
  char* out = text_.data();
  *out++ = hex[0];
  *out++ = hex[1];
  *out++ = '/';
  for (int i = 2; i < 32; ++i) *out++ = hex[i];
  if (executable) *out++ = '.', *out++ = 'x';
  *out = '\0';
}

int ObjectStore::link_out(const ObjectName& object, int dir_fd, const char* name) const {
  return ::linkat(fd_.get(), object.c_str(), dir_fd, name, 0) == 0 ? 0 : errno;
}

int ObjectStore::copy_out(const ObjectName& object, int dir_fd, const char* name) const {
  UniqueFd from(::openat(fd_.get(), object.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!from) return errno;
  struct stat st {};
  if (::fstat(from.get(), &st) != 0) return errno;
  UniqueFd to(::openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 0555));
  if (!to) return errno;
  return copy_fd(from.get(), to.get());
}

// link(2) into the store, making the fan-out directory on first use.
int ObjectStore::link_in(int dir_fd, const char* name, const ObjectName& object) {
  if (::linkat(dir_fd, name, fd_.get(), object.c_str(), 0) == 0) return 0;
  if (errno != ENOENT) return errno;
  if (::mkdirat(fd_.get(), object.fan_out_dir().c_str(), 0755) != 0 && errno != EEXIST)
    return errno;
  return ::linkat(dir_fd, name, fd_.get(), object.c_str(), 0) == 0 ? 0 : errno;
}

// The file becomes the object even though one exists (which has too many links).
int ObjectStore::replace_object(int dir_fd, const char* name, const ObjectName& object) {
  std::string temp = unique_name("tmp/");
  if (::linkat(dir_fd, name, fd_.get(), temp.c_str(), 0) != 0) return errno;
  int err = ::renameat(fd_.get(), temp.c_str(), fd_.get(), object.c_str()) == 0 ? 0 : errno;
  if (err != 0) ::unlinkat(fd_.get(), temp.c_str(), 0);
  return err;
}

Result<ObjectStore::Adopted, int> ObjectStore::adopt(int dir_fd, const char* name,
                                                     const ObjectName& object) {
  // A concurrent gc may remove the object between our EEXIST and our link to
  // it; then the next round stores our copy instead. Three rounds is plenty.
  for (int round = 0; round < 3; ++round) {
    int err = link_in(dir_fd, name, object);
    if (err == 0) return Adopted::stored;
    if (err == EXDEV || err == EPERM) return Adopted::kept_copy;
    if (err == EMLINK) {
      err = replace_object(dir_fd, name, object);
      return err == 0 ? Result<Adopted, int>(Adopted::stored) : unexpected(err);
    }
    if (err != EEXIST) return unexpected(err);
    // Swap our copy for a link to the stored object, atomically (rename), so
    // that the name never disappears, even if the object does.
    std::string temp = unique_name(".tpurun-link-");
    err = link_out(object, dir_fd, temp.c_str());
    if (err == ENOENT) continue;
    if (err == EMLINK) {
      err = replace_object(dir_fd, name, object);
      return err == 0 ? Result<Adopted, int>(Adopted::stored) : unexpected(err);
    }
    if (err == EXDEV || err == EPERM || err == EEXIST) return Adopted::kept_copy;
    if (err != 0) return unexpected(err);
    if (::renameat(dir_fd, temp.c_str(), dir_fd, name) != 0) {
      err = errno;
      ::unlinkat(dir_fd, temp.c_str(), 0);
      return unexpected(err);
    }
    return Adopted::shared;
  }
  return Adopted::kept_copy;
}

Result<ObjectStore::Adopted, int> ObjectStore::adopt_published(int dir_fd, const char* name,
                                                               const ObjectName& object) {
  int err = link_in(dir_fd, name, object);
  if (err == 0) return Adopted::stored;
  if (err == EEXIST || err == EXDEV || err == EPERM) return Adopted::kept_copy;
  if (err == EMLINK) err = replace_object(dir_fd, name, object);
  return err == 0 ? Result<Adopted, int>(Adopted::stored) : unexpected(err);
}

}  // namespace tpurun::staging

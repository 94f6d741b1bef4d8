#pragma once
// The per-user, content-addressed object store:
//   <staging_root>/<user>/.objects/<2 hex>/<30 hex>[.x]
// An object is a read-only file named by the XXH3-128 of its bytes; ".x"
// marks executable content (hard links share the mode, so the same bytes
// with and without the x bit are two objects). Snapshots are hard links to
// objects; an object nothing links to (link count 1) is garbage.
//
// Objects only ever appear through link() of a complete file, so concurrent
// writers (two stagings by the same user) are safe: whoever links second gets
// EEXIST and uses the object already there, which has the same bytes.
#include <array>
#include <string>

#include "staging/content_hash.hpp"
#include "staging/fs_util.hpp"
#include "tpurun/util/result.hpp"
#include "tpurun/util/safe_dir.hpp"

namespace tpurun::staging {

// "ab/cdef...[.x]", relative to the store; a fixed buffer, as this is
// made once per file on the hot path.
class ObjectName {
 public:
  ObjectName(const ContentHash& hash, bool executable);
  const char* c_str() const { return text_.data(); }
  std::string_view view() const { return text_.data(); }
  std::string fan_out_dir() const { return std::string(text_.data(), 2); }

 private:
  std::array<char, 2 + 1 + 30 + 2 + 1> text_;
};

class ObjectStore {
 public:
  // Opens <user_dir>/.objects, creating it (and .objects/tmp) if missing;
  // both must be the caller's own (see safe_dir.hpp).
  static Result<ObjectStore, std::string> open(const SafeDir& user_dir);

  // Hard-links the object to dir_fd/name. 0, or errno: ENOENT when the store
  // does not have it (never stored, or collected); EMLINK, EXDEV, EPERM when
  // it cannot be linked (then copy_out).
  int link_out(const ObjectName& object, int dir_fd, const char* name) const;

  // Copies the object to a new read-only file dir_fd/name. 0 or errno.
  int copy_out(const ObjectName& object, int dir_fd, const char* name) const;

  enum class Adopted { stored, shared, kept_copy };
  // Makes the finished file dir_fd/name the object, by hard-linking it into
  // the store. When the object exists already, the file is replaced by a link
  // to it (shared). When linking is impossible (EXDEV, EPERM) the file stays
  // an unshared copy. When the object has too many links (EMLINK) the file
  // becomes the object, so later snapshots link to it. Other errno: failure.
  Result<Adopted, int> adopt(int dir_fd, const char* name, const ObjectName& object);
  // The same for a file of a published snapshot, which is never replaced (on
  // NFS a worker reading the old file would get ESTALE): stored, or kept_copy
  // when the object exists already. ENOENT: the file is gone.
  Result<Adopted, int> adopt_published(int dir_fd, const char* name, const ObjectName& object);

  int fd() const { return fd_.get(); }

 private:
  explicit ObjectStore(UniqueFd fd) : fd_(std::move(fd)) {}
  int link_in(int dir_fd, const char* name, const ObjectName& object);
  int replace_object(int dir_fd, const char* name, const ObjectName& object);

  UniqueFd fd_;
};

}  // namespace tpurun::staging

#pragma once
// Directories on a shared root (the NFS staging and logs roots) that other
// users of the mount cannot take over. Every directory tpurun keeps there for
// a user (<root>/<user> and everything below it) must be that user's own, not
// a symlink, and not writable by group or others; every directory from "/" down
// to the root must be root's or the caller's, and writable by others only
// with the sticky bit (like /tmp). Each step is an openat(O_NOFOLLOW) relative
// to the fd of the step before, so a name swapped in between is never
// followed. See "Threat model: the shared mount" in docs/ownership.md.
#include <sys/stat.h>
#include <sys/types.h>

#include <optional>

#include <stdexcept>
#include <string>
#include <vector>

#include "tpurun/util/result.hpp"
#include "tpurun/util/unique_fd.hpp"

namespace tpurun {

// The per-user dirs (<root>/<user>): other users can neither read nor list
// them. The umask can narrow these modes further, never widen them.
constexpr mode_t kPrivateDirMode = 0700;
// Directories below them; the per-user dir above already keeps others out.
constexpr mode_t kOwnDirMode = 0755;
// NFS's anonymous user, which root_squash makes of root on a client.
constexpr uid_t kSquashedRootUid = 65534;

struct DirProblem {
  enum class Kind {
    missing,        // nothing there (and not asked to create it)
    io,             // an errno other than ENOENT
    symlink,        // a symlink where a directory must be
    not_directory,  // a file, socket, ... where a directory must be
    foreign_owner,  // owned by another user
    writable,       // writable by group or others (own dirs), or without the sticky bit (parents)
  };
  Kind kind = Kind::io;
  std::string path;
  bool parent = false;  // a directory above the per-user dirs (the root or its parents)
  std::string owner;    // user name (or uid) of what is there
  bool owner_is_caller = false;
  std::string caller;   // user name (or uid) tpurun runs as
  unsigned mode = 0;    // st_mode & 07777 of what is there
  std::string link_target;
  int err = 0;  // for missing and io

  // Something is there that must not be (rather than nothing, or an errno).
  bool unsafe() const { return kind != Kind::missing && kind != Kind::io; }
  // What is wrong (path, owner, mode) and the one command that fixes it.
  std::string message() const;
};

class UnsafeDirError : public std::runtime_error {
 public:
  explicit UnsafeDirError(DirProblem problem);
  const DirProblem& problem() const { return problem_; }

 private:
  DirProblem problem_;
};

// A verified directory: an fd to use with the *at() calls, and the path for messages.
struct SafeDir {
  UniqueFd fd;
  std::string path;
};

// Opens a shared root. Symlinks in `root` itself are resolved once (they are
// the admin's); then each directory on the resolved path is checked as a parent.
// The fd is O_PATH: good for *at() calls, not for reading.
Result<SafeDir, DirProblem> open_shared_root(const std::string& root);

enum class Create { never, if_missing, exclusive };

// Opens parent/name, which must be the caller's own directory, creating it with
// `mode` (narrowed by the umask) as `create` says. `exclusive` fails with
// kind io, err EEXIST when it exists. The fd can be read (fdopendir).
Result<SafeDir, DirProblem> open_own_dir(const SafeDir& parent, const std::string& name,
                                         Create create, mode_t mode = kOwnDirMode);

// open_shared_root(root), then open_own_dir for each name: the first one (the
// per-user dir) with kPrivateDirMode, the others with kOwnDirMode.
Result<SafeDir, DirProblem> open_own_path(const std::string& root,
                                          const std::vector<std::string>& names, Create create);

// The own-directory checks alone, on an lstat result (for a listing that
// needs no fd of each entry): nullopt when it is the caller's own, private one.
std::optional<DirProblem> check_own_dir(const struct stat& st, const std::string& path);

// A name that is one path component: not empty, ".", ".." and without '/'.
bool is_plain_name(const std::string& name);

}  // namespace tpurun

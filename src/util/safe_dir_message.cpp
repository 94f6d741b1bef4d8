// DirProblem::message: what is wrong with a directory on the shared root, and
// the one command that fixes it.
#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "tpurun/util/safe_dir.hpp"

namespace tpurun {
namespace {

// `sudo ` unless the caller owns the thing (then they can fix it themselves).
std::string sudo(const DirProblem& p) { return p.owner_is_caller ? "" : "sudo "; }

std::string who_fixes(const DirProblem& p) {
  return p.owner_is_caller ? "Fix it with" : "An admin must fix it with";
}

// On NFS with root_squash (Filestore's default) root on a client is nobody,
// so `sudo` there cannot change root's dirs: say where it works.
const char* const kWhereRootIsRoot =
    " (as root where root is root: on the NFS server, or from a client the export gives root access, e.g. a "
    "Filestore IP range with NO_ROOT_SQUASH; with root_squash, sudo on a client acts as nobody)";

// What works under root_squash too, in a root that is sticky like /tmp: the
// owner of what is in it may remove it (unless that is nobody, root squashed).
std::string or_its_owner(const DirProblem& p, const char* command) {
  if (p.owner == "nobody" || p.owner == "uid " + std::to_string(kSquashedRootUid)) return "";
  return fmt::format("; or {}, its owner: {} {}", p.owner, command, p.path);
}

}  // namespace

std::string DirProblem::message() const {
  const std::string facts = fmt::format("owner {}, mode {:04o}", owner, mode);
  switch (kind) {
    case Kind::missing:
      return fmt::format("{} does not exist{}", path,
                         parent ? " (is the shared file system mounted?)" : "");
    case Kind::io:
      if (err == EEXIST) return fmt::format("{} exists already", path);
      return fmt::format("cannot open {}: {}", path, std::strerror(err));
    case Kind::symlink:
    case Kind::not_directory: {
      std::string what = kind == Kind::symlink
                             ? fmt::format("is a symlink{} ({})",
                                           link_target.empty() ? "" : " to " + link_target, facts)
                             : fmt::format("is not a directory ({})", facts);
      if (parent) {
        return fmt::format("{} {}, where tpurun expects a directory; tpurun never follows a "
                           "symlink it did not resolve itself. {}: {}rm {}{}",
                           path, what, who_fixes(*this), sudo(*this), path,
                           owner_is_caller ? "" : kWhereRootIsRoot);
      }
      if (owner_is_caller) {
        return fmt::format("{} {}: tpurun keeps your files only in a directory of your own. Fix it with: rm {}",
                           path, what, path);
      }
      return fmt::format("{} {}: tpurun keeps your files only in a directory of your own. Another user may "
                         "have planted it; an admin must remove it with: sudo rm {}{}{}",
                         path, what, path, kWhereRootIsRoot, or_its_owner(*this, "rm"));
    }
    case Kind::foreign_owner:
      if (parent) {
        return fmt::format("{} is owned by {} ({}): that user could swap the shared root or what "
                           "is in it. An admin must make it root's: chown root {}{}; or point the "
                           "roots at dirs an admin made, e.g. sudo install -d -m 1777 SHARE/tpurun/staging "
                           "SHARE/tpurun/logs (made through a client with root_squash they belong to "
                           "nobody, which tpurun accepts like root)",
                           path, owner, facts, path, kWhereRootIsRoot);
      }
      if (path.ends_with("/" + owner)) {
        // It is named after its owner: the dir is fine, tpurun runs as someone
        // else (USER says one user, the uid another). Never advise removing it.
        return fmt::format("{} belongs to {} ({}), but tpurun runs as {}: run tpurun as {} "
                           "(tpurun takes the user from $USER)",
                           path, owner, facts, caller, owner);
      }
      return fmt::format("{} is not yours ({}): another user may have created it to read or "
                         "replace your code and logs, so tpurun will not use it. An admin must "
                         "remove it: sudo rm -rf {}{}{}",
                         path, facts, path, kWhereRootIsRoot, or_its_owner(*this, "rm -rf"));
    case Kind::writable:
      if (parent) {
        // The seeds' own share root: `sudo chmod go+rw /share`. +t keeps everyone's
        // right to make their own dirs and takes away renaming other users'.
        return fmt::format("{} is writable by others without the sticky bit ({}): any user could "
                           "rename what is in it, your snapshots and logs included. {}: {}chmod +t {} "
                           "(everyone keeps making their own dirs there, as with /tmp){}",
                           path, facts, who_fixes(*this), sudo(*this), path,
                           owner_is_caller ? "" : kWhereRootIsRoot);
      }
      return fmt::format("{} is writable by group or others ({}): another user could replace "
                         "what tpurun writes there. Fix it with: chmod go-w {}",
                         path, facts, path);
  }
  return path + ": unsafe directory";
}

UnsafeDirError::UnsafeDirError(DirProblem problem)
    : std::runtime_error(problem.message()), problem_(std::move(problem)) {}

}  // namespace tpurun

// collect_garbage: old snapshots, stale temp dirs, then unreferenced objects.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "staging/fs_util.hpp"
#include "staging/snapshot_name.hpp"
#include "tpurun/staging/gc.hpp"
#include "tpurun/staging/snapshot_pin.hpp"
#include "tpurun/util/safe_dir.hpp"

namespace tpurun {
namespace {

using namespace staging;
using Clock = std::chrono::system_clock;

constexpr auto kStaleTemp = std::chrono::hours(1);

Clock::time_point mtime_of(const struct stat& st) {
  return Clock::time_point(
      std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(mtime_ns(st))));
}

// For a dry run: how many links to each inode the doomed snapshots hold, so
// that we can tell which objects would be left with no other link.
struct DoomedLinks {
  struct Inode {
    std::size_t links = 0;
    nlink_t nlink = 0;
    std::uint64_t size = 0;
  };
  std::unordered_map<ino_t, Inode> inodes;

  void count(int dir_fd) {
    for (const std::string& name : list_dir_names(dir_fd)) {
      struct stat st {};
      if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISDIR(st.st_mode)) {
        UniqueFd sub(open_dir_at(dir_fd, name.c_str()));
        if (sub) count(sub.get());
      } else if (S_ISREG(st.st_mode)) {
        Inode& inode = inodes[st.st_ino];
        ++inode.links;
        inode.nlink = st.st_nlink;
        inode.size = static_cast<std::uint64_t>(st.st_size);
      }
    }
  }
  std::size_t links_to(ino_t ino) const {
    auto it = inodes.find(ino);
    return it == inodes.end() ? 0 : it->second.links;
  }
  std::uint64_t unshared_bytes() const {  // files only the doomed snapshots have (copies)
    std::uint64_t bytes = 0;
    for (const auto& [ino, inode] : inodes) bytes += inode.links == inode.nlink ? inode.size : 0;
    return bytes;
  }
};

class Collector {
 public:
  Collector(const GcRequest& request, int user_fd, GcReport& report)
      : request_(request), user_fd_(user_fd), report_(report) {
    now_ = request.now == Clock::time_point{} ? Clock::now() : request.now;
  }

  void snapshots_and_temps() {
    for (const std::string& name : list_dir_names(user_fd_)) {
      struct stat st {};
      if (::fstatat(user_fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
        continue;
      if (is_snapshot_name(name)) {
        // The newer of the two times, so that a touched snapshot stays.
        auto when = std::max(mtime_of(st), snapshot_name_time(name).value_or(Clock::time_point{}));
        if (when >= now_ - request_.older_than) continue;
        if (auto used = request_.in_use.find(name); used != request_.in_use.end()) {
          report_.kept.push_back({name, used->second});
          continue;
        }
        // Held until it is gone: a stage that pins it meanwhile sees it gone.
        const SnapshotRemovalLock lock(user_fd_, name);
        if (lock.pinned()) {
          report_.kept.push_back({name, {}});  // no run yet: a stage is sending or launching it
          continue;
        }
        report_.snapshots_removed.push_back(name);
        if (request_.dry_run) {
          UniqueFd dir(open_dir_at(user_fd_, name.c_str()));
          if (dir) doomed_.count(dir.get());
        }
        remove(user_fd_, name, name);
      } else if (name.starts_with(".tmp-") && mtime_of(st) < now_ - kStaleTemp) {
        report_.temps_removed.push_back(name);
        remove(user_fd_, name, name);
      }
    }
    if (request_.dry_run) report_.bytes_freed += doomed_.unshared_bytes();
    if (!request_.dry_run) tree_links();
  }

  // The index of snapshots by tree (".tree-<hash>" -> name): links to a
  // snapshot that is gone are dropped.
  void tree_links() {
    for (const std::string& name : list_dir_names(user_fd_)) {
      if (!name.starts_with(".tree-")) continue;
      char target[256] = {};
      const ssize_t n = ::readlinkat(user_fd_, name.c_str(), target, sizeof target - 1);
      struct stat st {};
      if (n > 0 && ::fstatat(user_fd_, target, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) continue;
      ::unlinkat(user_fd_, name.c_str(), 0);
    }
  }

  void object_temps(int objects_fd) {
    UniqueFd tmp(open_dir_at(objects_fd, "tmp"));
    if (!tmp) return;
    for (const std::string& name : list_dir_names(tmp.get())) {
      struct stat st {};
      if (::fstatat(tmp.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
          mtime_of(st) >= now_ - kStaleTemp)
        continue;
      report_.temps_removed.push_back(".objects/tmp/" + name);
      remove(tmp.get(), name, ".objects/tmp/" + name);
    }
  }

  void unreferenced_objects(int objects_fd) {
    for (const std::string& fan : list_dir_names(objects_fd)) {
      if (fan.size() != 2 || !std::isxdigit(static_cast<unsigned char>(fan[0])) ||
          !std::isxdigit(static_cast<unsigned char>(fan[1]))) {
        continue;
      }
      UniqueFd dir(open_dir_at(objects_fd, fan.c_str()));
      if (!dir) continue;
      for (const std::string& name : list_dir_names(dir.get())) {
        struct stat st {};
        if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode))
          continue;
        std::size_t other_links = request_.dry_run ? doomed_.links_to(st.st_ino) : 0;
        if (st.st_nlink - other_links != 1) continue;
        if (!request_.dry_run && ::unlinkat(dir.get(), name.c_str(), 0) != 0) {
          if (errno != ENOENT)
            report_.errors.push_back(".objects/" + fan + "/" + name + ": " + errno_text(errno));
          continue;
        }
        ++report_.objects_removed;
        report_.bytes_freed += static_cast<std::uint64_t>(st.st_size);
      }
    }
  }

 private:
  void remove(int dir_fd, const std::string& name, const std::string& shown) {
    if (request_.dry_run) return;
    std::string failed;
    if (int err = remove_tree_at(dir_fd, name, &failed, &report_.bytes_freed); err != 0) {
      report_.errors.push_back("cannot remove " + (failed.empty() ? shown : failed) + ": " +
                               errno_text(err));
    }
  }

  const GcRequest& request_;
  int user_fd_;
  GcReport& report_;
  Clock::time_point now_;
  DoomedLinks doomed_;
};

}  // namespace

GcReport collect_garbage(const GcRequest& request) {
  GcReport report;
  if (request.user.empty() || request.user == "." || request.user == ".." ||
      request.user.find('/') != std::string::npos) {
    report.refused = "invalid user name: '" + request.user + "'";
    return report;
  }
  auto user = open_own_path(request.staging_root, {request.user}, Create::never);
  if (!user) {
    const DirProblem& p = user.error();
    if (p.kind == DirProblem::Kind::missing && !p.parent) return report;  // nothing staged yet
    report.refused = p.parent && !p.unsafe() ? "cannot open the staging root " +
                                                     request.staging_root + ": " + errno_text(p.err)
                                               : p.message();
    return report;
  }
  Collector collector(request, user->fd.get(), report);
  collector.snapshots_and_temps();
  auto objects = open_own_dir(*user, ".objects", Create::never);
  if (objects) {
    collector.object_temps(objects->fd.get());
    collector.unreferenced_objects(objects->fd.get());
  } else if (objects.error().kind != DirProblem::Kind::missing) {
    report.errors.push_back(objects.error().message());
  }
  return report;
}

}  // namespace tpurun

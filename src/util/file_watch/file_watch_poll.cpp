// The polling FileWatch: one statx per file when its backoff says it is due,
// for files whose changes the kernel cannot announce (NFS).
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "tpurun/util/file_watch/file_watch.hpp"
#include "tpurun/util/unique_fd.hpp"

namespace tpurun {
namespace {

using Clock = std::chrono::steady_clock;

struct Seen {
  bool exists = false;
  std::uint64_t ino = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  bool operator==(const Seen&) const = default;
};

class PollWatch : public FileWatch {
 public:
  PollWatch(const std::string& dir, BackoffOptions backoff)
      : dir_(dir), dir_fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)), backoff_(backoff) {}

  int add(const std::string& name) override {
    files_.push_back(File{name, PollBackoff(Clock::now(), backoff_), Seen{}});
    return static_cast<int>(files_.size()) - 1;
  }

  std::vector<int> wait(std::chrono::milliseconds timeout) override {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      std::vector<int> changed = check_due(Clock::now());
      const auto now = Clock::now();
      if (!changed.empty() || now >= deadline) return changed;
      auto next = deadline;
      for (const File& f : files_) next = std::min(next, f.backoff.due());
      const auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
      // poll() with no fds: a sleep that a signal (Ctrl-C) cuts short.
      if (ms > 0 && ::poll(nullptr, 0, static_cast<int>(ms)) < 0) return {};
    }
  }

  std::string method() const override { return "poll"; }

 private:
  struct File {
    std::string name;
    PollBackoff backoff;
    Seen seen;
  };

  // Checks every file due now, or due soon (so that quiet files, which share
  // one schedule, are checked in one pass rather than one wakeup each).
  std::vector<int> check_due(Clock::time_point now) {
    std::vector<int> changed;
    revalidated_ = false;
    const auto soon = now + backoff_.fastest / 2;
    for (size_t i = 0; i < files_.size(); ++i) {
      File& f = files_[i];
      if (f.backoff.due() > soon) continue;
      const Seen seen = look(f.name);
      const bool grew = !(seen == f.seen);
      f.seen = seen;
      f.backoff.checked(grew, now);
      if (grew) changed.push_back(static_cast<int>(i));
    }
    return changed;
  }

  // AT_STATX_FORCE_SYNC: on NFS, ask the server rather than the attribute
  // cache (which can be a minute old for a quiet file); local filesystems ignore it.
  // A file that is not there may be a cached "no such file": FORCE_SYNC does
  // not clear that, but an open() of the directory does (NFS close-to-open
  // checks the directory, and a changed one drops its cached lookups). So
  // once per pass that meets a missing file, the directory is opened by path.
  Seen look(const std::string& name) {
    struct statx st {};
    const int dir = dir_fd_ ? dir_fd_.get() : AT_FDCWD;
    const std::string path = dir_fd_ ? name : dir_ + "/" + name;
    auto stat = [&] {
      return ::statx(dir, path.c_str(), AT_SYMLINK_NOFOLLOW | AT_STATX_FORCE_SYNC,
                     STATX_INO | STATX_SIZE | STATX_MTIME, &st) == 0;
    };
    bool found = stat();
    if (!found && errno == ENOENT && !revalidated_) {
      revalidated_ = true;
      UniqueFd reopened(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
      found = stat();
    }
    if (!found) return Seen{};
    return Seen{true, st.stx_ino, st.stx_size,
                static_cast<std::int64_t>(st.stx_mtime.tv_sec) * 1'000'000'000 + st.stx_mtime.tv_nsec};
  }

  std::string dir_;
  UniqueFd dir_fd_;
  BackoffOptions backoff_;
  std::vector<File> files_;
  bool revalidated_ = false;  // the directory was opened again in this pass
};

}  // namespace

std::unique_ptr<FileWatch> make_poll_watch(const std::string& dir, BackoffOptions backoff) {
  return std::make_unique<PollWatch>(dir, backoff);
}

}  // namespace tpurun

// adopt_pending: link the files that stages left out of the object store
// into it, one pending list at a time (staging/adoption.hpp).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <thread>

#include "staging/adoption.hpp"
#include "staging/dir_cursor.hpp"
#include "staging/object_store.hpp"
#include "staging/snapshot_name.hpp"
#include "tpurun/staging/adopt_pending.hpp"
#include "tpurun/util/identity.hpp"
#include "tpurun/util/safe_dir.hpp"

namespace tpurun {
namespace {

using namespace staging;

// As many links in flight as the stage keeps creates: on NFS each waits on a
// round trip.
constexpr unsigned kThreads = 8;
constexpr std::size_t kRun = 32;
constexpr auto kBusyPoll = std::chrono::milliseconds(20);

bool is_list_name(const std::string& name) {
  return name.size() > 5 && name.front() != '.' && name.ends_with(".list");
}

std::vector<std::string> list_names(int dir_fd) {
  std::vector<std::string> names = list_dir_names(dir_fd);  // sorted: snapshot names start with their time
  std::erase_if(names, [](const std::string& name) { return !is_list_name(name); });
  return names;
}

std::string read_fd(int fd) {
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return text;
    text.append(buffer, static_cast<std::size_t>(n));
  }
}

// Files linked by a few threads; the first error stops the list (the same
// errno would come back for every file).
class ListAdopter {
 public:
  ListAdopter(const PendingList& list, int snapshot_fd, ObjectStore& store, const CancelToken& cancel)
      : list_(list), snapshot_fd_(snapshot_fd), store_(store), cancel_(cancel) {}

  void run(AdoptReport& report) {
    const unsigned threads = std::clamp<unsigned>(static_cast<unsigned>(list_.files.size() / kRun), 1, kThreads);
    std::vector<std::thread> helpers;
    for (unsigned i = 1; i < threads; ++i) helpers.emplace_back([this] { work(); });
    work();
    for (std::thread& t : helpers) t.join();
    report.stored += stored_;
    report.kept += kept_;
    report.gone += gone_;
  }
  const std::optional<std::string>& error() const { return error_; }
  bool stopped() const { return stop_; }

 private:
  void work() {
    DirCursor dirs(snapshot_fd_, DirCursor::Use::link_from);
    const std::size_t n = list_.files.size();
    for (std::size_t begin; (begin = next_.fetch_add(kRun)) < n;) {
      for (std::size_t i = begin; i < std::min(begin + kRun, n); ++i) {
        if (stop_ || cancel_.cancelled()) return void(stop_ = true);
        adopt(dirs, list_.files[i]);
      }
    }
  }

  void adopt(DirCursor& dirs, const PendingFile& file) {
    std::string_view base;
    const int dir_fd = dirs.parent_of(file.path, &base);
    int err = dir_fd < 0 ? errno : 0;
    if (err == 0) {
      auto adopted = store_.adopt_published(dir_fd, std::string(base).c_str(), ObjectName(file.hash, file.executable));
      if (adopted) return void((*adopted == ObjectStore::Adopted::stored ? stored_ : kept_) += 1);
      err = adopted.error();
    }
    if (err == ENOENT || err == ENOTDIR) return void(gone_ += 1);
    std::lock_guard lock(mutex_);
    if (!error_) error_ = fmt::format("cannot link {} into the object store: {}", file.path, errno_text(err));
    stop_ = true;
  }

  const PendingList& list_;
  const int snapshot_fd_;
  ObjectStore& store_;
  const CancelToken& cancel_;
  std::atomic<std::size_t> next_{0}, stored_{0}, kept_{0}, gone_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::optional<std::string> error_;
};

enum class Outcome { done, busy, interrupted };

// One list, locked. done: the list is finished or given up (and removed).
Outcome adopt_list(int dir_fd, const std::string& dir, const std::string& name, AdoptBusy busy,
                   const CancelToken& cancel, AdoptReport& report) {
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return Outcome::done;  // finished by another adopter since the listing
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (busy == AdoptBusy::skip) return Outcome::busy;
    if (cancel.cancelled()) return Outcome::interrupted;
    std::this_thread::sleep_for(kBusyPoll);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || st.st_nlink == 0) return Outcome::done;  // finished while we waited
  const std::string where = dir + "/" + name;
  auto give_up = [&](const std::string& why) {
    report.errors.push_back(fmt::format("{}: {}; its files stay unshared copies", where, why));
    ::unlinkat(dir_fd, name.c_str(), 0);
    return Outcome::done;
  };
  auto list = decode_pending_list(read_fd(fd.get()));
  if (!list) return give_up("not a pending list tpurun can read");
  if (!is_plain_name(list->user) || !is_snapshot_name(list->snapshot)) return give_up("it names no snapshot of a user");
  auto finished = [&] {
    ::unlinkat(dir_fd, name.c_str(), 0);
    ++report.lists;
    return Outcome::done;
  };
  auto user_dir = open_own_path(list->staging_root, {list->user}, Create::never);
  if (!user_dir && user_dir.error().kind == DirProblem::Kind::missing) {
    report.gone += list->files.size();
    return finished();
  }
  if (!user_dir) return give_up(user_dir.error().message());
  auto snapshot = open_own_dir(*user_dir, list->snapshot, Create::never);
  if (!snapshot && snapshot.error().kind == DirProblem::Kind::missing) {
    report.gone += list->files.size();
    return finished();
  }
  if (!snapshot) return give_up(snapshot.error().message());
  auto store = ObjectStore::open(*user_dir);
  if (!store) return give_up(store.error());
  ListAdopter adopter(*list, snapshot->fd.get(), *store, cancel);
  adopter.run(report);
  if (adopter.error()) return give_up(*adopter.error());
  if (adopter.stopped()) return Outcome::interrupted;  // the list stays for the next adopter
  return finished();
}

}  // namespace

AdoptReport adopt_pending(const std::string& adopt_dir, AdoptBusy busy, const CancelToken& cancel) {
  AdoptReport report;
  UniqueFd dir_fd(open_dir_at(AT_FDCWD, adopt_dir.c_str()));
  if (!dir_fd) return report;  // nothing was ever deferred here
  for (const std::string& name : list_names(dir_fd.get())) {
    Outcome outcome = adopt_list(dir_fd.get(), adopt_dir, name, busy, cancel, report);
    if (outcome == Outcome::busy) ++report.busy;
    if (outcome == Outcome::interrupted) break;
  }
  return report;
}

std::string pending_adoptions_dir(const Environment& env) { return cache_dir(env) + "/adopt"; }

}  // namespace tpurun

#include "staging/snapshot_build.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "staging/file_list.hpp"
#include "staging/file_placer.hpp"
#include "staging/size_guard.hpp"

namespace tpurun::staging {
namespace {

// Files are handed out in runs, so that each thread walks directories in
// order and opens each of them about once.
constexpr std::size_t kRun = 32;
constexpr auto kProgressInterval = std::chrono::milliseconds(100);

class TreeFill {
 public:
  explicit TreeFill(const TreeInput& input) : in_(input), bytes_total_(total_bytes(input.files)) {
    result_.hashes.resize(input.files.size());
    result_.pending.resize(input.files.size());
    result_.sizes.resize(input.files.size());
    result_.changed.resize(input.files.size());
  }

  Result<FilledTree, StageError> run() {
    std::vector<std::thread> helpers;
    for (unsigned i = 1; i < in_.threads; ++i) helpers.emplace_back([this] { work(false); });
    work(true);
    for (std::thread& t : helpers) t.join();
    if (error_) return unexpected(*error_);
    report();
    result_.files_read = files_read_;
    result_.bytes = bytes_done_;
    result_.bytes_reused = bytes_reused_;
    return std::move(result_);
  }

 private:
  void work(bool reports) {
    try {
      FilePlacer placer(in_.source_fd, in_.tree_fd, in_.store, in_.defer_store);
      const std::size_t n = in_.files.size();
      for (std::size_t begin; (begin = next_.fetch_add(kRun)) < n;) {
        for (std::size_t i = begin; i < std::min(begin + kRun, n); ++i) {
          if (stop_.load(std::memory_order_relaxed)) return;
          if (in_.cancel.cancelled()) return fail(cancelled_error());
          auto placed = placer.place(in_.files[i], in_.known[i]);
          if (!placed) return fail(std::move(placed.error()));
          result_.hashes[i] = placed->hash;
          result_.pending[i] = placed->pending;
          result_.sizes[i] = placed->bytes;
          result_.changed[i] = placed->changed;
          files_done_.fetch_add(1, std::memory_order_relaxed);
          files_read_.fetch_add(placed->read ? 1 : 0, std::memory_order_relaxed);
          bytes_done_.fetch_add(placed->bytes, std::memory_order_relaxed);
          if (placed->reused) bytes_reused_.fetch_add(placed->bytes, std::memory_order_relaxed);
          if (reports) maybe_report();
        }
      }
    } catch (const std::exception& e) {
      fail(StageError{std::string("staging failed: ") + e.what()});
    }
  }

  void fail(StageError error) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = std::move(error);
    stop_ = true;
  }

  void maybe_report() {
    auto now = std::chrono::steady_clock::now();
    if (now - last_report_ < kProgressInterval) return;
    last_report_ = now;
    report();
  }

  void report() {
    if (!in_.progress) return;
    in_.progress(SnapshotProgress{files_done_.load(), in_.files.size(), bytes_done_.load(),
                                  bytes_total_, bytes_reused_.load()});
  }

  const TreeInput& in_;
  const std::uint64_t bytes_total_;
  FilledTree result_;
  std::atomic<std::size_t> next_{0};
  std::atomic<std::size_t> files_done_{0};
  std::atomic<std::size_t> files_read_{0};
  std::atomic<std::uint64_t> bytes_done_{0};
  std::atomic<std::uint64_t> bytes_reused_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::optional<StageError> error_;
  std::chrono::steady_clock::time_point last_report_ = std::chrono::steady_clock::now();
};

// Read-only as the umask made it: write bits go, no bit is added.
int remove_write_bits(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return errno;
  return ::fchmod(fd, st.st_mode & 07555) == 0 ? 0 : errno;
}

}  // namespace

Result<FilledTree, StageError> fill_tree(const TreeInput& input) { return TreeFill(input).run(); }

int make_read_only(int tree_fd, const std::vector<SourceFile>& files) {
  std::set<std::string> dirs;
  for (const SourceFile& file : files) {
    // Deepest first: once a directory is known, so are its parents.
    for (size_t slash = file.path.rfind('/'); slash != std::string::npos && slash > 0;
         slash = file.path.rfind('/', slash - 1)) {
      if (!dirs.insert(file.path.substr(0, slash)).second) break;
    }
  }
  for (const std::string& dir : dirs) {
    UniqueFd fd(::openat(tree_fd, dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return errno;
    if (int err = remove_write_bits(fd.get()); err != 0) return err;
  }
  return remove_write_bits(tree_fd);
}

ContentHash tree_hash(const std::vector<SourceFile>& files,
                      const std::vector<ContentHash>& hashes) {
  Hasher hasher;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const SourceFile& file = files[i];
    const std::string_view nul("\0", 1);
    hasher.update(file.path);
    hasher.update(nul);
    hasher.update(file.symlink ? "120000" : file.executable ? "100755" : "100644");
    hasher.update(nul);
    hasher.update(file.symlink ? file.link_target : hashes[i].hex());
    hasher.update(nul);
  }
  return hasher.digest();
}

std::vector<SnapshotEntry> entries_of(const std::vector<SourceFile>& files, const std::vector<ContentHash>& hashes,
                                      const std::vector<std::uint64_t>* sizes) {
  std::vector<SnapshotEntry> entries;
  entries.reserve(files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    const SourceFile& f = files[i];
    SnapshotEntry e{f.path, f.symlink, f.executable, sizes ? (*sizes)[i] : f.stamp.size, "", f.link_target};
    if (!f.symlink) e.object = std::string(ObjectName(hashes[i], f.executable).view());
    entries.push_back(std::move(e));
  }
  return entries;
}

}  // namespace tpurun::staging

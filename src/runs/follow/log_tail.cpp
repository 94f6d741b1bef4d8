#include "tpurun/runs/follow/log_tail.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sstream>

#include "runs/record/log_dir_layout.hpp"
#include "tpurun/fanout/fanout.hpp"

namespace tpurun {
namespace {

constexpr size_t kChunk = 64 * 1024;  // per log per round
constexpr size_t kPassRounds = 4;      // per pass: 256 KiB of each log at most

// What one call reads was on disk when it began: its lines share that time.
class Pass {
 public:
  explicit Pass(LiveOutput& live, bool continues = false) : live_(live) { live_.begin_pass(continues); }
  ~Pass() { live_.end_pass(); }
  Pass(const Pass&) = delete;
  Pass& operator=(const Pass&) = delete;

 private:
  LiveOutput& live_;
};

}  // namespace

LogTail::LogTail(std::string log_dir, std::vector<Worker> workers, LiveOutput& live, size_t pass_bytes)
    : log_dir_(std::move(log_dir)), live_(live), pass_bytes_(pass_bytes) {
  for (Worker& w : workers) tails_.push_back(Tail{w, worker_log_path(log_dir_, w.index), -1, 0, false});
}

LogTail::~LogTail() {
  for (Tail& tail : tails_) {
    if (tail.fd >= 0) ::close(tail.fd);
  }
}

size_t LogTail::drain_once(Tail& tail) {
  if (tail.fd < 0) tail.fd = ::open(tail.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (tail.fd < 0) return 0;  // not created yet
  char buf[kChunk];
  const ssize_t n = ::pread(tail.fd, buf, sizeof buf, tail.offset);
  if (n == 0 && restarted(tail)) return drain_once(tail);
  if (n <= 0) return 0;
  live_.sink(tail.worker.index).write(Stream::out, std::string_view(buf, static_cast<size_t>(n)));
  tail.offset += n;
  return static_cast<size_t>(n);
}

// At the end of the file: was it truncated, or replaced, under us? Then, as
// `tail -F` does, it is read again from its start (nothing of it is skipped).
bool LogTail::restarted(Tail& tail) {
  struct stat open_st {}, path_st {};
  if (::fstat(tail.fd, &open_st) != 0) return false;
  const bool replaced = ::stat(tail.path.c_str(), &path_st) == 0 &&
                        (path_st.st_ino != open_st.st_ino || path_st.st_dev != open_st.st_dev);
  if (!replaced && open_st.st_size >= tail.offset) return false;
  if (replaced) {
    ::close(tail.fd);
    tail.fd = -1;
  }
  tail.offset = 0;
  live_.sink(tail.worker.index)
      .write(Stream::err, fmt::format("\ntpurun: {} was {}; reading it again from its start\n",
                                      std::filesystem::path(tail.path).filename().string(),
                                      replaced ? "replaced" : "truncated"));
  return true;
}

void LogTail::reopen(Tail& tail) {
  if (tail.fd < 0) return;
  const int fresh = ::open(tail.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fresh < 0) return;
  struct stat old_st {}, new_st {};
  if (::fstat(tail.fd, &old_st) == 0 && ::fstat(fresh, &new_st) == 0 && old_st.st_ino == new_st.st_ino &&
      old_st.st_dev == new_st.st_dev) {
    ::close(tail.fd);
    tail.fd = fresh;
    return;
  }
  ::close(fresh);  // another file there now: restarted() says so at the old one's end
}

void LogTail::drain() {
  Pass pass(live_);
  drain_all();
}

void LogTail::drain_all() {
  for (bool any = true; any;) {
    any = false;
    for (Tail& tail : tails_) any = drain_once(tail) > 0 || any;
  }
}

bool LogTail::drain(const std::vector<int>& positions) {
  Pass pass(live_, !behind_.empty());
  // Round robin, every log in every round (one that was caught up may have
  // grown since), so that no log gets far ahead of another: held lines wait
  // for their copies in the others, within a bound of held text. At most
  // kPassRounds rounds, and about pass_bytes_ in all.
  const size_t most = std::max<size_t>(1, pass_bytes_ / (kChunk * std::max<size_t>(1, positions.size())));
  const size_t rounds = std::min(kPassRounds, most);
  bool read = false;
  std::vector<int> full;  // the logs whose last read was a whole chunk: they may have more
  for (size_t round = 0; round < rounds; ++round) {
    full.clear();
    bool any = false;
    for (int i : positions) {
      const size_t n = drain_once(tails_.at(static_cast<size_t>(i)));
      any = any || n > 0;
      if (n == kChunk) full.push_back(i);
    }
    read = read || any;
    if (!any) break;
  }
  behind_ = std::move(full);
  return read;
}

std::vector<std::string> LogTail::file_names() const {
  std::vector<std::string> names;
  for (const Tail& tail : tails_) names.push_back(std::filesystem::path(tail.path).filename().string());
  return names;
}

void LogTail::ended(int worker_index, bool ok) {
  for (Tail& tail : tails_) {
    if (tail.worker.index != worker_index || tail.ended) continue;
    tail.ended = true;
    Pass pass(live_);
    reopen(tail);
    while (drain_once(tail) > 0) {
    }  // to its end: it grows no more (the others may, as fast as they like)
    live_.set_state(worker_index, ok ? WorkerRunState::exited : WorkerRunState::failed);
    live_.sink(worker_index).flush();
  }
}

void LogTail::finish() {
  Pass pass(live_);
  for (Tail& tail : tails_) reopen(tail);
  drain_all();
  live_.finish();
}

std::vector<std::string> last_lines(const std::string& path, size_t n) {
  std::vector<std::string> lines;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return lines;
  off_t size = ::lseek(fd, 0, SEEK_END);
  off_t start = size > 65536 ? size - 65536 : 0;
  std::string text(static_cast<size_t>(size - start), '\0');
  ssize_t got = ::pread(fd, text.data(), text.size(), start);
  ::close(fd);
  if (got <= 0) return lines;
  text.resize(static_cast<size_t>(got));
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  if (start > 0 && !lines.empty()) lines.erase(lines.begin());  // cut mid-line
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<long>(n));
  return lines;
}

}  // namespace tpurun

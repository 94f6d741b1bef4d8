#include "runs/watcher/log_mirror.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>

#include "runs/record/log_dir_layout.hpp"
#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/util/unique_fd.hpp"
#include "tpurun/worker/programs.hpp"
#include "tpurun/worker/tokens.hpp"

namespace tpurun {
namespace {

void write_at(int fd, std::string_view data, std::uint64_t at, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(at + done));
    if (n <= 0) throw std::runtime_error(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
}

bool safe_relative(const std::string& path) {
  if (path.empty() || path.front() == '/') return false;
  for (const auto& part : std::filesystem::path(path)) {
    if (part == ".." || part == ".") return false;
  }
  return true;
}

// Replaces `path` whole (from `tmp`, renamed), with no fsync.
void write_whole(const std::string& path, const std::string& tmp, std::string_view data) {
  {
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (!fd) throw std::runtime_error(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    write_at(fd.get(), data, 0, path);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot write {}: {}", path, std::strerror(e)));
  }
}

}  // namespace

void MirrorState::new_host() {
  for (const auto& [path, file] : files) {
    if (path == worker_log_name(worker)) base[path] += file.offset;
  }
  files.clear();
}

std::string MirrorState::have_list() const {
  std::string list = fmt::format("{}\n", files.size());
  for (const auto& [path, f] : files) list += fmt::format("{} {} {} {}\n{}", f.offset, f.ino, f.mtime, path.size(), path);
  return list;
}

bool apply_mirror_frames(const std::string& local_dir, std::string& buffer, MirrorState& state,
                         std::uint64_t* bytes) {
  const std::string space = std::string(worker::kMirrorSpace) + " ";
  // What was applied leaves the buffer once, at the end (not a frame at a
  // time: thousands of small frames come in one read).
  size_t pos = 0;
  struct Consumed {
    std::string& buffer;
    size_t& pos;
    ~Consumed() { buffer.erase(0, pos); }
  } consumed{buffer, pos};
  // A run dir that was removed is not made again here (the watcher ends):
  // looked at once per read, not per frame.
  struct stat run_dir {};
  const bool gone = ::stat(local_dir.c_str(), &run_dir) != 0 && errno == ENOENT;
  for (;;) {
    const size_t nl = buffer.find('\n', pos);
    if (nl == std::string::npos) return true;
    const std::string head = buffer.substr(pos, nl - pos);
    if (head == worker::kMirrorEnd) {
      state.ended = true;
      pos = nl + 1;
      continue;
    }
    if (head.starts_with(space)) {
      state.low_space = std::strtoull(head.c_str() + space.size(), nullptr, 10);
      pos = nl + 1;
      continue;
    }
    char kind = 0;
    unsigned long long len = 0, offset = 0, path_len = 0, ino = 0;
    long long mtime = 0;
    if (head.size() < 2 || head[1] != ' ' ||
        std::sscanf(head.c_str(), "%c %llu %llu %llu %llu %lld", &kind, &len, &offset, &path_len, &ino, &mtime) != 6 ||
        (kind != worker::kMirrorAppend[0] && kind != worker::kMirrorWhole[0])) {
      return false;
    }
    if (buffer.size() < nl + 1 + path_len + len) return true;  // the rest has not come yet
    const std::string path = buffer.substr(nl + 1, path_len);
    const std::string_view data(buffer.data() + nl + 1 + path_len, len);
    if (!safe_relative(path)) return false;
    if (gone) {
      pos = nl + 1 + path_len + len;
      continue;
    }
    const std::string local = local_dir + "/" + mirrored_path(state.worker, path);
    std::filesystem::create_directories(std::filesystem::path(local).parent_path());
    if (kind == worker::kMirrorWhole[0]) {
      // The temp in a dir of tpurun's own: no name of the job's is taken.
      const std::string tmp_dir = local_dir + "/" + worker::kLogTmpDir;
      std::filesystem::create_directories(tmp_dir);
      write_whole(local, fmt::format("{}/mirror-w{}", tmp_dir, state.worker), data);
    } else {
      UniqueFd fd(::open(local.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
      if (!fd) throw std::runtime_error(fmt::format("cannot write {}: {}", local, std::strerror(errno)));
      auto sent = state.files.find(path);
      const bool own_log = path == worker_log_name(state.worker);
      if (own_log) {
        // tpurun only appends to it: sent again from 0, it is a new disk's,
        // and what came before stays (an earlier attempt's traceback).
        if (sent != state.files.end() && offset < sent->second.offset) state.base[path] += sent->second.offset;
      } else if (offset == 0 && ::ftruncate(fd.get(), 0) != 0) {  // (sent again) from its start: a new copy
        throw std::runtime_error(fmt::format("cannot write {}: {}", local, std::strerror(errno)));
      }
      write_at(fd.get(), data, offset + (own_log ? state.base[path] : 0), local);
    }
    state.files[path] = {offset + len, ino, mtime};
    if (bytes != nullptr) *bytes += len;
    pos = nl + 1 + path_len + len;
  }
}

struct LogMirror::Worker_ {
  std::mutex mutex;
  Worker worker;            // under mutex
  std::atomic<bool> moved{false};  // elsewhere now: connect again
  bool new_disk = false;           // under mutex: a new VM, whose disk has none of what was sent
  MirrorState state;               // its thread's, until joined
  std::thread thread;
  std::atomic<bool> finishing{false};
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> progress{0};   // bytes read from its stream, ever
  std::atomic<long long> low_space{-1};     // what the worker said of its disk
  std::string error;                        // its thread's: why the last stream ended
};

LogMirror::LogMirror(std::vector<Worker> workers, Transport& transport, std::string remote_dir, std::string local_dir)
    : transport_(transport), remote_dir_(std::move(remote_dir)), local_dir_(std::move(local_dir)) {
  for (Worker& w : workers) {
    workers_.push_back(std::make_unique<Worker_>());
    workers_.back()->state.worker = w.index;
    workers_.back()->worker = std::move(w);
  }
}

LogMirror::~LogMirror() {
  stopping_ = true;
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
}

void LogMirror::start() {
  for (auto& w : workers_) w->thread = std::thread([this, &w] { mirror(*w); });
}

void LogMirror::finish(int idle_s) {
  idle_s_ = idle_s;
  for (auto& w : workers_) w->finishing = true;
  auto moved_at = std::chrono::steady_clock::now();
  std::uint64_t seen = 0;
  for (;;) {
    std::uint64_t now_seen = 0;
    bool all_done = true;
    for (auto& w : workers_) {
      now_seen += w->progress;
      all_done = all_done && (w->done || !w->thread.joinable());
    }
    if (all_done) break;
    const auto now = std::chrono::steady_clock::now();
    if (now_seen != seen) {
      seen = now_seen;
      moved_at = now;
    } else if (now - moved_at > std::chrono::seconds(idle_s)) {
      break;  // nothing arrived for idle_s: missing() names who is left
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  stopping_ = true;
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
}

std::vector<MissingLogs> LogMirror::missing() const {
  std::vector<MissingLogs> out;
  for (const auto& w : workers_) {
    if (w->state.ended) continue;
    std::lock_guard lock(w->mutex);
    const std::string why = !w->error.empty() ? w->error
                                              : fmt::format("nothing arrived from it for {}s at the run's end", idle_s_);
    out.push_back({w->worker.index, w->worker.host, remote_dir_, why});
  }
  return out;
}

std::optional<std::pair<Worker, std::uint64_t>> LogMirror::low_space() const {
  for (const auto& w : workers_) {
    const long long free = w->low_space;
    if (free < 0) continue;
    std::lock_guard lock(w->mutex);
    return std::make_pair(w->worker, static_cast<std::uint64_t>(free));
  }
  return std::nullopt;
}

void LogMirror::move_to(const std::vector<Worker>& now, bool new_vm) {
  for (size_t i = 0; i < now.size() && i < workers_.size(); ++i) {
    std::lock_guard lock(workers_[i]->mutex);
    workers_[i]->worker = now[i];
    workers_[i]->new_disk = workers_[i]->new_disk || new_vm;
    workers_[i]->moved = true;
  }
}

void LogMirror::mirror(Worker_& w) {
  CancelToken never;
  while (!stopping_ && !w.done) {
    Worker worker;
    {
      std::lock_guard lock(w.mutex);
      worker = w.worker;
      w.moved = false;
      if (w.new_disk) w.state.new_host();
      w.new_disk = false;
    }
    auto connection = transport_.connect(worker, never);
    // What arrived goes on stdin, after the program: never in argv, which a
    // few thousand files would take past the kernel's limit.
    const RemoteCommand command = python3_command(worker::kLogMirrorPy, {shell_quote(remote_dir_)});  // worker/log_mirror.py
    Result<std::unique_ptr<ExecStream>, TransportError> stream = unexpected(TransportError{});
    if (connection) stream = (*connection)->open_exec(command.command_line, never);
    if (connection && stream) {
      if (auto error = (*stream)->write(command.stdin_data + w.state.have_list())) stream = unexpected(*error);
    }
    if (!connection || !stream) {
      const std::string why = connection ? stream.error().message : connection.error().message;
      spdlog::debug("mirror {}: {}", worker.display(), why);
      {
        std::lock_guard lock(w.mutex);
        w.error = why;
      }
      if (w.finishing) break;  // it cannot be asked: what arrived is what there is
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    std::string buffer, ended_why = "its mirror's stream ended before its last round";
    bool asked = false;
    for (;;) {
      if (stopping_) return;
      if (w.moved) break;  // the old VM's stream: what it had not sent is gone with it
      if (w.finishing && !asked) {
        (*stream)->write(std::string(worker::kMirrorQuit) + "\n");
        asked = true;
      }
      auto got = (*stream)->read(200);
      if (!got) ended_why = got.error().message;
      if (!got || got->eof) break;
      w.progress += got->data.size();
      buffer += got->data;
      std::uint64_t n = 0;
      bool ok = false;
      try {
        ok = apply_mirror_frames(local_dir_, buffer, w.state, &n);
        if (!ok) ended_why = "it sent what is not a mirror's frame";
      } catch (const std::exception& e) {
        ended_why = e.what();
        spdlog::warn("mirror {}: {}", worker.display(), e.what());
      }
      bytes_ += n;
      if (w.state.low_space) w.low_space = static_cast<long long>(*w.state.low_space);
      if (!ok) break;
      if (w.state.ended) {
        w.done = true;
        return;
      }
    }
    {
      std::lock_guard lock(w.mutex);
      w.error = ended_why;
    }
    if (w.finishing) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  w.done = true;
}

}  // namespace tpurun

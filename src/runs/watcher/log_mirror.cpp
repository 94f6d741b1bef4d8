#include "runs/watcher/log_mirror.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>

#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/util/atomic_file.hpp"
#include "tpurun/util/unique_fd.hpp"
#include "tpurun/worker/programs.hpp"
#include "tpurun/worker/tokens.hpp"

namespace tpurun {
namespace {

bool safe_relative(const std::string& path) {
  if (path.empty() || path.front() == '/') return false;
  for (const auto& part : std::filesystem::path(path)) {
    if (part == ".." || part == ".") return false;
  }
  return true;
}

bool is_job_log(const std::string& path) { return path.ends_with(".log"); }

}  // namespace

void MirrorState::new_host() {
  for (const auto& [path, offset] : offsets) {
    if (is_job_log(path)) base[path] += offset;
  }
  offsets.clear();
}

bool apply_mirror_frames(const std::string& local_dir, std::string& buffer, MirrorState& state,
                         std::uint64_t* bytes) {
  for (;;) {
    const size_t nl = buffer.find('\n');
    if (nl == std::string::npos) return true;
    const std::string head = buffer.substr(0, nl);
    if (head == worker::kMirrorEnd) {
      state.ended = true;
      buffer.erase(0, nl + 1);
      continue;
    }
    char kind = 0;
    unsigned long long len = 0, offset = 0, path_len = 0;
    if (std::sscanf(head.c_str(), "%c %llu %llu %llu", &kind, &len, &offset, &path_len) != 4 ||
        (kind != worker::kMirrorAppend[0] && kind != worker::kMirrorWhole[0])) {
      return false;
    }
    if (buffer.size() < nl + 1 + path_len + len) return true;  // the rest has not come yet
    const std::string path = buffer.substr(nl + 1, path_len);
    const std::string_view data(buffer.data() + nl + 1 + path_len, len);
    if (!safe_relative(path)) return false;
    const std::string local = local_dir + "/" + path;
    std::filesystem::create_directories(std::filesystem::path(local).parent_path());
    if (kind == worker::kMirrorWhole[0]) {
      write_file_atomic(local, std::string(data));
    } else {
      UniqueFd fd(::open(local.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
      if (!fd) throw std::runtime_error(fmt::format("cannot write {}: {}", local, std::strerror(errno)));
      auto sent = state.offsets.find(path);
      if (sent != state.offsets.end() && offset < sent->second) {  // it started again there
        // A job's log keeps what came before (an earlier attempt's traceback);
        // another file is sent again whole.
        if (is_job_log(path)) {
          state.base[path] += sent->second;
        } else if (offset == 0) {
          ::ftruncate(fd.get(), 0);
        }
      }
      const std::uint64_t at = offset + (is_job_log(path) ? state.base[path] : 0);
      size_t done = 0;
      while (done < data.size()) {
        const ssize_t n = ::pwrite(fd.get(), data.data() + done, data.size() - done, static_cast<off_t>(at + done));
        if (n <= 0) throw std::runtime_error(fmt::format("cannot write {}: {}", local, std::strerror(errno)));
        done += static_cast<size_t>(n);
      }
    }
    state.offsets[path] = offset + len;
    if (bytes != nullptr) *bytes += len;
    buffer.erase(0, nl + 1 + path_len + len);
  }
}

struct LogMirror::Worker_ {
  std::mutex mutex;
  Worker worker;            // under mutex
  std::atomic<bool> moved{false};  // elsewhere now: connect again
  bool new_disk = false;           // under mutex: a new VM, whose disk has none of what was sent
  MirrorState state;
  std::thread thread;
  std::unique_ptr<ExecStream> stream;  // the current one (its thread's)
  std::atomic<bool> finishing{false};
  std::atomic<bool> done{false};
};

LogMirror::LogMirror(std::vector<Worker> workers, Transport& transport, std::string remote_dir, std::string local_dir)
    : transport_(transport), remote_dir_(std::move(remote_dir)), local_dir_(std::move(local_dir)) {
  for (Worker& w : workers) {
    workers_.push_back(std::make_unique<Worker_>());
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

void LogMirror::finish(int wait_s) {
  for (auto& w : workers_) w->finishing = true;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
  for (auto& w : workers_) {
    while (!w->done && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  stopping_ = true;
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
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
    std::vector<std::string> words = {shell_quote(remote_dir_)};
    for (const auto& [path, offset] : w.state.offsets) words.push_back(shell_quote(fmt::format("{}={}", path, offset)));
    const RemoteCommand command = python3_command(worker::kLogMirrorPy, words);  // worker/log_mirror.py
    Result<std::unique_ptr<ExecStream>, TransportError> stream = unexpected(TransportError{});
    if (connection) stream = (*connection)->open_exec(command.command_line, never);
    if (connection && stream) {
      if (auto error = (*stream)->write(command.stdin_data)) stream = unexpected(*error);
    }
    if (!connection || !stream) {
      spdlog::debug("mirror {}: {}", worker.display(),
                    connection ? stream.error().message : connection.error().message);
      if (w.finishing) break;  // it cannot be asked: what arrived is what there is
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    std::string buffer;
    bool asked = false;
    for (;;) {
      if (stopping_) return;
      if (w.moved) break;  // the old VM's stream: what it had not sent is gone with it
      if (w.finishing && !asked) {
        (*stream)->write(std::string(worker::kMirrorQuit) + "\n");
        asked = true;
      }
      auto got = (*stream)->read(200);
      if (!got || got->eof) break;
      buffer += got->data;
      std::uint64_t n = 0;
      bool ok = false;
      try {
        ok = apply_mirror_frames(local_dir_, buffer, w.state, &n);
      } catch (const std::exception& e) {
        spdlog::warn("mirror {}: {}", worker.display(), e.what());
      }
      bytes_ += n;
      if (!ok) break;
      if (w.state.ended) {
        w.done = true;
        return;
      }
    }
    if (w.finishing) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  w.done = true;
}

}  // namespace tpurun

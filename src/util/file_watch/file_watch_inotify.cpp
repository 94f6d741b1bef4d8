// The inotify FileWatch: one watch on the directory, events by file name.
// A slow sweep (a polling watch every few seconds) guards against a
// filesystem whose writes inotify does not see: when a sweep twice finds a
// change that inotify never reported, the watch turns to polling.
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <unordered_map>

#include "tpurun/util/file_watch/file_watch.hpp"
#include "tpurun/util/unique_fd.hpp"
#include "util/file_watch/file_watch_inotify.hpp"

namespace tpurun {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kMissesToGiveUp = 2;
constexpr uint32_t kEvents = IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO;

class InotifyWatch : public FileWatch {
 public:
  InotifyWatch(std::string dir, UniqueFd fd, BackoffOptions backoff, std::chrono::milliseconds sweep_every)
      : dir_(std::move(dir)), fd_(std::move(fd)), backoff_(backoff), sweep_every_(sweep_every),
        sweep_(make_poll_watch(dir_, BackoffOptions{sweep_every, sweep_every, 1.0})) {}

  int add(const std::string& name) override {
    const int id = static_cast<int>(names_.size());
    names_.push_back(name);
    ids_[name] = id;
    heard_.push_back(false);
    sweep_->add(name);
    if (fallback_) fallback_->add(name);
    return id;
  }

  std::vector<int> wait(std::chrono::milliseconds timeout) override {
    if (fallback_) return fallback_->wait(timeout);
    std::set<int> changed;
    pollfd pfd{fd_.get(), POLLIN, 0};
    const auto until_sweep = std::chrono::ceil<std::chrono::milliseconds>(next_sweep_ - Clock::now());
    const auto ms = std::max<long long>(0, std::min<long long>(timeout.count(), until_sweep.count()));
    if (::poll(&pfd, 1, static_cast<int>(ms)) > 0) read_events(changed);
    if (Clock::now() >= next_sweep_) sweep(changed);
    if (fallback_) {  // everything, once: what inotify missed is not known
      for (int id = 0; id < static_cast<int>(names_.size()); ++id) changed.insert(id);
    }
    return {changed.begin(), changed.end()};
  }

  std::string method() const override { return fallback_ ? "poll (inotify saw nothing)" : "inotify"; }

 private:
  void read_events(std::set<int>& changed) {
    alignas(inotify_event) char buf[16384];
    ssize_t n;
    while ((n = ::read(fd_.get(), buf, sizeof buf)) > 0) {
      for (char* p = buf; p < buf + n;) {
        const auto* e = reinterpret_cast<const inotify_event*>(p);
        p += sizeof(inotify_event) + e->len;
        if (e->mask & IN_Q_OVERFLOW) {
          for (int id = 0; id < static_cast<int>(names_.size()); ++id) hear(id, changed);
          continue;
        }
        if (e->len == 0) continue;
        auto it = ids_.find(e->name);
        if (it != ids_.end()) hear(it->second, changed);
      }
    }
  }

  void hear(int id, std::set<int>& changed) {
    heard_[static_cast<size_t>(id)] = true;
    changed.insert(id);
  }

  void sweep(std::set<int>& changed) {
    const std::vector<int> swept = sweep_->wait(std::chrono::milliseconds(0));
    read_events(changed);  // events queued while the sweep ran
    if (!first_sweep_) {
      for (int id : swept) {
        if (!heard_[static_cast<size_t>(id)]) ++misses_;
      }
    }
    first_sweep_ = false;
    changed.insert(swept.begin(), swept.end());
    heard_.assign(heard_.size(), false);
    next_sweep_ = Clock::now() + sweep_every_;
    if (misses_ >= kMissesToGiveUp) {
      fallback_ = make_poll_watch(dir_, backoff_);
      for (const std::string& name : names_) fallback_->add(name);
    }
  }

  std::string dir_;
  UniqueFd fd_;
  BackoffOptions backoff_;
  std::chrono::milliseconds sweep_every_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, int> ids_;
  std::vector<bool> heard_;  // per id: inotify reported it since the last sweep
  std::unique_ptr<FileWatch> sweep_;
  Clock::time_point next_sweep_ = Clock::now();
  bool first_sweep_ = true;
  int misses_ = 0;
  std::unique_ptr<FileWatch> fallback_;
};

}  // namespace

std::unique_ptr<FileWatch> make_inotify_watch(const std::string& dir, const std::string& heard_dir,
                                              BackoffOptions backoff, std::chrono::milliseconds sweep_every) {
  UniqueFd fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!fd) return nullptr;
  if (::inotify_add_watch(fd.get(), heard_dir.c_str(), kEvents | IN_ONLYDIR | IN_DONT_FOLLOW) < 0) return nullptr;
  return std::make_unique<InotifyWatch>(dir, std::move(fd), backoff, sweep_every);
}

std::unique_ptr<FileWatch> make_inotify_watch(const std::string& dir, BackoffOptions backoff) {
  return make_inotify_watch(dir, dir, backoff, kInotifySweep);
}

}  // namespace tpurun

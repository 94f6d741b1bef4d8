#pragma once
// "`down` means down" (issue 39, finding 9): `tpurun down` leaves an intent,
// per pod's TPU VM and per user, in $XDG_STATE_HOME/tpurun/down/ (default
// ~/.local/state), written before it deletes anything. What would make the
// VM again obeys it: a running `up` stops (and deletes what it made), and a
// `stage --recreate` watcher ends its run as stopped instead of recreating.
// An intent counts only for what began before it: a later `up`, or a run
// staged later, is not stopped by it (so the pod can be brought up again).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "tpurun/pod/pod.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {

struct DownIntent {
  std::chrono::system_clock::time_point at;  // when down was asked (milliseconds kept)
  std::string tpu;
  std::string zone;  // where down looked first (the VM's zone, or the pod's)
  std::string project;
  std::string pod;
  std::string host;
  int pid = 0;
};

// $XDG_STATE_HOME/tpurun/down/<project>_<name>.json: one per TPU VM name, as the placement is.
std::string down_intent_path(const GcloudSpec& spec, const Environment& env);
// Written whole (temp + rename); throws std::runtime_error when it cannot be.
void write_down_intent(const std::string& path, const DownIntent& intent);
// nullopt when there is none, or it is unreadable (then nothing is stopped by it).
std::optional<DownIntent> read_down_intent(const std::string& path);

// The rule: an intent stops what began before it (or in the same instant: a
// run's start is recorded to the second), never what began after it.
bool down_intent_applies(const DownIntent& intent, std::chrono::system_clock::time_point started);
// The intent at `path` when it applies to something that began at `started`.
std::optional<DownIntent> down_intent_since(const std::string& path, std::chrono::system_clock::time_point started);

// "`tpurun down` (2026-11-29T20:40:01Z, pid 4242 on devvm) asked for TPU VM rc to be deleted"
std::string down_intent_text(const DownIntent& intent);

// Looks for an intent that applies to what began at `started`, every
// `every`, on a thread of its own, until it finds one or is destroyed:
// flag() is then set (CancelToken::or_when), and seen() says which.
class DownIntentWatch {
 public:
  DownIntentWatch(std::string path, std::chrono::system_clock::time_point started,
                  std::chrono::milliseconds every = std::chrono::milliseconds(500));
  ~DownIntentWatch();
  DownIntentWatch(const DownIntentWatch&) = delete;
  DownIntentWatch& operator=(const DownIntentWatch&) = delete;
  const std::atomic<bool>* flag() const { return &found_; }
  std::optional<DownIntent> seen() const;

 private:
  void look();

  std::string path_;
  std::chrono::system_clock::time_point started_;
  std::chrono::milliseconds every_;
  std::atomic<bool> found_{false};
  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::optional<DownIntent> seen_;
  std::thread thread_;
};

}  // namespace tpurun

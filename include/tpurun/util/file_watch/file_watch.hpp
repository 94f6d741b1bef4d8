#pragma once
// Waiting for files in one directory to change, so that a follower reads only
// the files that did: inotify where the kernel sees the writes (a local
// filesystem), polling with a per-file backoff (poll_backoff.hpp) where it
// does not (NFS, CIFS, FUSE: inotify there never hears of writes made on
// other clients).
//
//   auto watch = make_file_watch(dir);
//   int id = watch->add("worker0.log");         // it need not exist yet
//   for (int changed : watch->wait(500ms)) ...  // read those files
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tpurun/util/file_watch/poll_backoff.hpp"

namespace tpurun {

class FileWatch {
 public:
  virtual ~FileWatch() = default;
  // Watches `name` in the directory; ids are 0, 1, 2, ... in the order added.
  virtual int add(const std::string& name) = 0;
  // Waits at most `timeout` (less when interrupted by a signal) and returns
  // the ids of the files that may have changed since the last call: created,
  // appended to, or replaced by a rename. Empty on timeout.
  virtual std::vector<int> wait(std::chrono::milliseconds timeout) = 0;
  // "inotify" or "poll" (for benchmarks and debugging).
  virtual std::string method() const = 0;
};

enum class WatchMethod { automatic, inotify, poll };

// automatic: inotify unless `dir` is on a network filesystem or inotify is
// unavailable (no instances or watches left); then polling. A watch that is
// inotify also sweeps every file every few seconds, and when a sweep twice
// finds a change that inotify never reported, it turns to polling.
std::unique_ptr<FileWatch> make_file_watch(const std::string& dir, WatchMethod method = WatchMethod::automatic,
                                           BackoffOptions backoff = {});
std::unique_ptr<FileWatch> make_poll_watch(const std::string& dir, BackoffOptions backoff);
// nullptr when inotify cannot watch `dir`.
std::unique_ptr<FileWatch> make_inotify_watch(const std::string& dir, BackoffOptions backoff);

// "poll", "inotify" or "auto" (as TPURUN_FOLLOW_WATCH takes them); false for anything else.
bool parse_watch_method(const std::string& text, WatchMethod& out);

// NFS, CIFS/SMB, FUSE (gcsfuse), Ceph, 9p, AFS, Lustre, GFS2, OCFS2: statfs's f_type.
bool is_network_filesystem(long f_type);
bool on_network_filesystem(const std::string& dir);

}  // namespace tpurun

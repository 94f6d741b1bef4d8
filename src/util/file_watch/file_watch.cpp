// Choosing how to watch a directory's files: inotify where the kernel sees the
// writes, polling where they come from other machines.
#include <sys/vfs.h>

#include "tpurun/util/file_watch/file_watch.hpp"

namespace tpurun {

bool is_network_filesystem(long f_type) {
  switch (static_cast<unsigned long>(f_type) & 0xFFFFFFFFul) {
    case 0x6969:      // NFS
    case 0x517B:      // SMB
    case 0xFF534D42:  // CIFS
    case 0xFE534D42:  // SMB2
    case 0x65735546:  // FUSE (gcsfuse, sshfs)
    case 0x00C36400:  // Ceph
    case 0x01021997:  // 9p
    case 0x5346414F:  // AFS
    case 0x6B414653:  // kAFS
    case 0x0BD00BD0:  // Lustre
    case 0x01161970:  // GFS2
    case 0x7461636F:  // OCFS2
      return true;
    default:
      return false;
  }
}

bool on_network_filesystem(const std::string& dir) {
  struct statfs st {};
  return ::statfs(dir.c_str(), &st) == 0 && is_network_filesystem(static_cast<long>(st.f_type));
}

bool parse_watch_method(const std::string& text, WatchMethod& out) {
  if (text == "auto") out = WatchMethod::automatic;
  else if (text == "inotify") out = WatchMethod::inotify;
  else if (text == "poll") out = WatchMethod::poll;
  else return false;
  return true;
}

std::unique_ptr<FileWatch> make_file_watch(const std::string& dir, WatchMethod method, BackoffOptions backoff) {
  if (method == WatchMethod::poll || (method == WatchMethod::automatic && on_network_filesystem(dir))) {
    return make_poll_watch(dir, backoff);
  }
  if (auto watch = make_inotify_watch(dir, backoff)) return watch;
  return make_poll_watch(dir, backoff);
}

}  // namespace tpurun

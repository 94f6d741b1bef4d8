#pragma once
// Children tpurun starts get stdin, stdout and stderr and nothing else: a
// descriptor someone forgot to mark close-on-exec (libssh's sockets, a log
// file) must not outlive its owner in gcloud, git or a detached watcher.
//
// glibc 2.34 closes them in one call (closefrom and
// posix_spawn_file_actions_addclosefrom_np); older systems (Debian 11, Ubuntu
// 20.04) walk /proc/self/fd. CMake's feature tests pick the route; this pair of
// functions is the only place that knows which.
#include <spawn.h>

namespace tpurun {

// Adds file actions that close every descriptor above stderr in the child of
// posix_spawn. Without addclosefrom_np this is a snapshot of the descriptors
// open now: call it just before posix_spawn.
void close_inherited_on_spawn(posix_spawn_file_actions_t& actions);

// Closes every descriptor above stderr. Async-signal-safe: for a child between
// fork and exec.
void close_inherited_fds() noexcept;

}  // namespace tpurun

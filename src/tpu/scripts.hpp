#pragma once
// The remote halves of the TPU commands: POSIX sh scripts for a stock TPU VM
// image (sh, coreutils, findutils, procps, grep, sed; perl-base for the scan's
// fd walk where present). Each is sent on stdin and answers with a small line
// protocol: TPURUN-SCAN (parsed in scan_parse.cpp), TPURUN-KILL (kill_workers.cpp)
// and TPURUN-CLEAN (stale_lock.cpp).
#include <string>
#include <vector>

namespace tpurun::tpu {

// Args: status|kill GLOB...
const std::string& scan_script();
// Args: GRACE_CENTISECONDS AUDIT(0|1) ITEM...
//   ITEM: g:PGID (signal that group) | PID:UID:PGID:START (a victim; START: its start time)
//   AUDIT=1 (--force, as root): one syslog record per victim (`logger -t tpurun`) before
//   any signal; if one cannot be written, nothing is signalled.
const std::string& kill_script();
// Args: LOCK_INODE|- LOGS(0|1) GLOB...
const std::string& clean_script();

// Pieces shared by the scripts (scan_script.cpp).
extern const char* const kShPrelude;       // strict PATH, C locale, stderr silenced
extern const char* const kShDeviceFind;    // turns "$@" (globs) into find's -lname expression
extern const char* const kShLockFunction;  // lock_state INODE DEV -> $held, $lpid
extern const char* const kShStatFunction;  // pstat PID -> $pg, $st (start time); fails when gone
// fd_walk GLOB...: F (the /tmp files), H (candidate device fds) and denied lines
// (fd_walk_script.cpp).
const std::string& fd_walk_function();

// How a script is started on the worker.
enum class Privilege {
  prefer_root,  // sudo -n when it works, else the login user (scans)
  login_user,   // never sudo: the kernel then refuses to touch other users' processes
  root,         // sudo -n, or fail (kill --force, removing another user's files)
};

// The command line that runs `sh -s -- args...` (the script comes on stdin).
std::string script_command_line(Privilege privilege, const std::vector<std::string>& args);

}  // namespace tpurun::tpu

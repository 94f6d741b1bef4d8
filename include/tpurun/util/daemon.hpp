#pragma once
// Starting a process that outlives the caller, its terminal and its SSH session.
#include <string>
#include <vector>

#include "tpurun/util/result.hpp"

namespace tpurun {

// Runs this same binary (/proc/self/exe) with `args`, detached: double fork,
// own session (no controlling terminal, so no SIGHUP or Ctrl-C reaches it),
// stdin from /dev/null (or `stdin_fd`, when given), stdout and stderr appended
// to `log_path` (created 0600, never through a symlink), no other
// descriptors. Returns its pid.
Result<int, std::string> spawn_detached_self(const std::vector<std::string>& args, const std::string& log_path,
                                             int stdin_fd = -1);

}  // namespace tpurun

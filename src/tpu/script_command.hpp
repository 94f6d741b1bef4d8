#pragma once
// How the TPU programs of worker/ (scan.sh, kill.sh, clean.sh,
// profile_listener.sh; docs/protocols.md) are started on a worker: `sh -s`
// with the program on its stdin, as root or as the login user.
#include <string>
#include <vector>

namespace tpurun::tpu {

enum class Privilege {
  prefer_root,  // sudo -n when it works, else the login user (scans)
  login_user,   // never sudo: the kernel then refuses to touch other users' processes
  root,         // sudo -n, or fail (kill --force, removing another user's files)
};

// The command line that runs `sh -s -- args...` (the program comes on stdin).
std::string script_command_line(Privilege privilege, const std::vector<std::string>& args);

}  // namespace tpurun::tpu

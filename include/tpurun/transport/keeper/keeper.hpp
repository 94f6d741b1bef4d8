#pragma once
// The connection keeper (docs/keeper.md): one small process per user on the
// dev VM that keeps SSH sessions to recently used workers between commands,
// so that a repeated pod-wide command opens a channel instead of paying a
// TCP and SSH handshake per worker. Only its own user can use it (a private
// dir, SO_PEERCRED); every call through it has a deadline, and a keeper that
// is gone or wedged only sends the command to a direct connection.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/util/result.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {

// Where this user's keeper lives: a private dir ($XDG_RUNTIME_DIR/tpurun,
// else /tmp/tpurun-UID), its socket (named after tpurun's version and the
// environment the keeper authenticates with: HOME, SSH_AUTH_SOCK) and its log.
struct KeeperPlace {
  std::string dir;
  std::string socket;
  std::string log;
};

// Finds (and makes, mode 0700) the private dir. An error says what is unsafe
// about it (another owner, a symlink, a mode others can use).
Result<KeeperPlace, std::string> keeper_place(const Environment& env);

// How long kept sessions live unused: TPURUN_KEEP ("10m" by default; "0"
// turns the keeper off). A malformed value is a UsageError.
std::chrono::milliseconds keeper_idle(const Environment& env);

struct KeptSessionInfo {
  std::string host;
  int port = 22;
  std::string user;
  std::string alias;   // the worker's HostKeyAlias (gcloud pods)
  double age_s = 0;    // since the session was made
  double idle_s = 0;   // since it was last used (0 while in use)
  bool in_use = false;
  int peak_channels = 0;  // the most channels open on it at once, ever
};

struct KeeperInfo {
  int pid = 0;
  std::string version;
  double idle_limit_s = 0;
  std::vector<KeptSessionInfo> sessions;
};

// The keeper's own answer, or nullopt when no keeper answers at `place`.
std::optional<KeeperInfo> keeper_status(const KeeperPlace& place);
// Asks the keeper to close its sessions and exit: how many it closed, or
// nullopt when no keeper answered.
std::optional<int> keeper_stop(const KeeperPlace& place);
// Starts a keeper unless one answers; waits until it does. Its pid.
Result<int, std::string> keeper_start(const KeeperPlace& place, std::chrono::milliseconds idle);

// The keeper's own main loop (`tpurun _keeper`): serves until it has kept
// nothing for `idle`, its socket is taken away, or `stop`. Its exit code.
int run_keeper(const KeeperPlace& place, std::chrono::milliseconds idle);

}  // namespace tpurun

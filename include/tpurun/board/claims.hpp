#pragma once
// Claims on pods: "mine until 18:00" records on the shared mount that other
// users' tpurun respects (stage and exec refuse a pod someone else claimed).
//
// Layout: <logs_root>/.board/<pod>.<seq>.json, one file per claim ever taken,
// each owned by the user who took it. .board is shared like /tmp (1777: world
// writable with the sticky bit), so nobody can change or remove another
// user's file, and a file counts only when its owner (stat uid) is the user it
// names: a claim cannot be forged. Taking a claim is one link() of a complete
// file to the next free <seq> for the pod: link fails with EEXIST for every
// claimant but one, so two users claiming at once get exactly one winner.
// A claim is live until its expires_at (absolute UTC) or until released.
// See docs/board.md.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "tpurun/util/duration.hpp"  // format_utc_time
#include <vector>

namespace tpurun {

using WallClock = std::chrono::system_clock;

struct Claim {
  std::string pod;
  long long seq = 0;
  std::string user;
  std::string host;  // where it was taken, for people
  std::string note;
  WallClock::time_point created_at;
  WallClock::time_point expires_at;
  std::optional<WallClock::time_point> released_at;
  std::string file;  // path, for messages

  bool live(WallClock::time_point now) const { return !released_at && now < expires_at; }
};

std::string claim_to_json(const Claim& claim);
// Throws std::runtime_error naming what is wrong.
Claim claim_from_json(const std::string& text);

struct BoardScan {
  std::vector<Claim> claims;          // valid files only, any state, by pod then seq
  std::vector<std::string> warnings;  // corrupt or foreign files, each naming the file
  std::map<std::string, long long> max_seq;  // pod -> highest <seq> of any file, valid or not
};

struct ClaimOutcome {
  bool ok = false;
  Claim claim;                  // ours when ok; else the holder's
  std::vector<std::string> warnings;
};

class Board {
 public:
  // uid_of maps a user name to its uid (default: the passwd database); tests inject it.
  explicit Board(std::string logs_root,
                 std::function<std::optional<uid_t>(const std::string&)> uid_of = {});

  std::string dir() const { return logs_root_ + "/.board"; }
  // Every claim file ("" pod: all pods). A missing board is an empty scan.
  // Throws std::runtime_error when the board or logs_root is unsafe.
  BoardScan scan(const std::string& pod = "") const;
  // The live claim on `pod`, if any (the newest one).
  std::optional<Claim> holder(const std::string& pod, WallClock::time_point now,
                              std::vector<std::string>* warnings = nullptr) const;

  // Takes `pod` for `user` until now + duration. Refused (ok false, claim =
  // the holder's) when another user holds it, or `user` does and !extend.
  // With extend, the user's own live claim gets the new expiry.
  ClaimOutcome claim(const std::string& pod, const std::string& user, std::chrono::seconds duration,
                     const std::string& note, const std::string& host, WallClock::time_point now,
                     bool extend) const;
  // Ends `user`'s live claim on `pod`; nullopt when there is none.
  std::optional<Claim> release(const std::string& pod, const std::string& user,
                               WallClock::time_point now) const;

  // Idle marks, for the board's "idle 2h10m": a run's watcher, as the run's
  // user, says since when every chip of the run has been at 0% duty cycle
  // (`idle-<run id>`, readable by all; run dirs are private to their user).
  // A mark counts only when its owner is the user it names.
  void mark_idle(const std::string& run_id, const std::string& user, WallClock::time_point since) const;
  void clear_idle(const std::string& run_id) const;
  std::optional<WallClock::time_point> idle_since(const std::string& run_id, const std::string& user) const;

 private:
  std::string logs_root_;
  std::function<std::optional<uid_t>(const std::string&)> uid_of_;
};

}  // namespace tpurun

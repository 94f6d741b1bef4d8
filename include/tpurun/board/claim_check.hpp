#pragma once
// The board as the other commands see it: who the claimant is, which config
// pods have a board, and the check that stage and exec make before starting work.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/board/claims.hpp"
#include "tpurun/pod/config.hpp"
#include "tpurun/transport/context.hpp"

namespace tpurun {

// The name claims are signed with: the passwd name of the effective uid (a
// claim counts only when its file's owner is the user it names).
std::string claim_user();
// "2h03m left (until 2026-11-23T19:15:00Z)"
std::string claim_left(const Claim& claim, WallClock::time_point now);
// "bob, 2h03m left (until ...): note"
std::string claim_text(const Claim& claim, WallClock::time_point now);

// The config file's pods (without gcloud lookups). Throws UsageError when
// there is no config, or `pod` is given and unknown (with "did you mean").
ConfigFile load_board_config(Context& ctx);
const PodConfig& board_pod(const ConfigFile& config, const std::string& pod);
// `tpurun claims`: the live claims on the config's pods, read from each
// logs_root's board once (a claim counts on its pod's own logs_root only).
// Warnings about claim files go to `warn`.
std::vector<Claim> live_claims(const ConfigFile& config, WallClock::time_point now,
                               const std::function<void(const std::string&)>& warn);

// Throws UsageError when another user holds a live claim on `pod`, naming
// them, the time left and the note; with `ignore_claim` prints that it goes
// ahead anyway. Problems reading the board are warnings, never a refusal.
void respect_claims(const PodConfig& pod, bool ignore_claim, Context& ctx);

// For a delete of the pod's VM (a recreate, `down`): another user's live
// claim on `pod`, described, or nullopt. A board that cannot be read counts
// as claimed ("(unknown: ...)"): unlike stage, a delete does not go ahead on
// it. Warnings about claim files go to `say`.
std::optional<std::string> claimed_by_another(const std::string& logs_root, const std::string& pod,
                                              const std::string& user,
                                              const std::function<void(const std::string&)>& say);

}  // namespace tpurun

#include "tpurun/board/claim_check.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pwd.h>
#include <unistd.h>

#include <set>

#include "tpurun/pod/worker_select.hpp"
#include "tpurun/util/atomic_file.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/suggest.hpp"

namespace tpurun {

std::string claim_user() {
  if (const passwd* pw = ::getpwuid(::geteuid())) return pw->pw_name;
  return std::to_string(::geteuid());
}

std::string claim_left(const Claim& claim, WallClock::time_point now) {
  auto left = std::chrono::duration_cast<std::chrono::seconds>(claim.expires_at - now).count();
  return fmt::format("{} left (until {})", format_age(left), format_utc_time(claim.expires_at));
}

std::string claim_text(const Claim& claim, WallClock::time_point now) {
  return fmt::format("{}, {}{}", claim.user, claim_left(claim, now), claim.note.empty() ? "" : ": " + claim.note);
}

ConfigFile load_board_config(Context& ctx) {
  auto path = find_config_file(ctx.pod_request.config_path, ctx.env);
  if (!path) {
    throw UsageError("claims live on the shared mount of the pods in a config file, and there is none "
                     "(./tpurun.json, ~/.config/tpurun/config.json or --config FILE); see docs/board.md");
  }
  std::string text = read_small_file(*path);
  return parse_config(text, *path, ctx.env);
}

const PodConfig& board_pod(const ConfigFile& config, const std::string& pod) {
  auto it = config.pods.find(pod);
  if (it == config.pods.end()) {
    std::vector<std::string> names;
    for (const auto& [name, _] : config.pods) names.push_back(name);
    throw UsageError(fmt::format("unknown pod '{}' in {}{}; pods: {}", pod, config.path, did_you_mean(pod, names),
                                 fmt::join(names, ", ")));
  }
  if (!it->second.slices.empty()) {
    std::vector<std::string> slices;
    for (const Slice& slice : it->second.slices) slices.push_back(slice.pod);
    throw UsageError(fmt::format("pod '{}' is made of the slices {}: claims are on those, one by one", pod,
                                 fmt::join(slices, ", ")));
  }
  if (it->second.logs_root.empty()) {
    throw UsageError(fmt::format("pod '{}' has no logs_root, where claims are kept; see docs/board.md", pod));
  }
  return it->second;
}

namespace {

void respect_claim(const std::string& logs_root, const std::string& pod, bool ignore_claim, Context& ctx) {
  const auto now = WallClock::now();
  std::optional<Claim> held;
  std::vector<std::string> warnings;
  try {
    held = Board(logs_root).holder(pod, now, &warnings);
  } catch (const std::exception& e) {
    warnings.push_back(fmt::format("cannot read the claims on pod '{}': {}", pod, e.what()));
  }
  for (const std::string& w : warnings) fmt::print(ctx.err, "tpurun: warning: {}\n", w);
  if (!held || held->user == claim_user()) return;
  if (ignore_claim) {
    fmt::print(ctx.err, "tpurun: --ignore-claim: going ahead on pod '{}' claimed by {}\n", pod,
               claim_text(*held, now));
    return;
  }
  throw UsageError(fmt::format("pod '{}' is claimed by {}; ask them, pick another pod, or pass --ignore-claim "
                               "(see tpurun claims)",
                               pod, claim_text(*held, now)));
}

}  // namespace

std::vector<Claim> live_claims(const ConfigFile& config, WallClock::time_point now,
                               const std::function<void(const std::string&)>& warn) {
  std::set<std::string> roots;
  for (const auto& [name, pod] : config.pods) {
    if (!pod.logs_root.empty()) roots.insert(pod.logs_root);
  }
  std::vector<Claim> live;
  for (const std::string& root : roots) {
    BoardScan scan = Board(root).scan();
    for (const std::string& w : scan.warnings) warn(w);
    for (const Claim& c : scan.claims) {
      auto pod = config.pods.find(c.pod);
      if (c.live(now) && pod != config.pods.end() && pod->second.logs_root == root) live.push_back(c);
    }
  }
  return live;
}

void respect_claims(const PodConfig& pod, bool ignore_claim, Context& ctx) {
  if (pod.logs_root.empty()) return;
  // A multi-slice pod is claimed through its slices: a claim on any of them counts.
  if (pod.slices.empty()) respect_claim(pod.logs_root, pod.name, ignore_claim, ctx);
  for (const Slice& slice : pod.slices) respect_claim(pod.logs_root, slice.pod, ignore_claim, ctx);
}

std::optional<std::string> claimed_by_another(const std::string& logs_root, const std::string& pod,
                                              const std::string& user,
                                              const std::function<void(const std::string&)>& say) {
  const auto now = WallClock::now();
  try {
    std::vector<std::string> warnings;
    auto held = Board(logs_root).holder(pod, now, &warnings);
    for (const std::string& w : warnings) say("warning: " + w);
    if (held && held->user != user) return claim_text(*held, now);
  } catch (const std::exception& e) {
    return fmt::format("(unknown: the pod's claims cannot be read: {})", e.what());
  }
  return std::nullopt;
}

}  // namespace tpurun

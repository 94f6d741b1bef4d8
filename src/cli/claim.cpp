// tpurun claim / release / claims: advisory claims on pods, kept on the
// shared mount (include/tpurun/claims.hpp, docs/board.md).
#include "cli/claim.hpp"

#include <fmt/format.h>

#include "cli/help_texts.hpp"
#include "tpurun/board/claim_check.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/ui/board_view.hpp"
#include "tpurun/ui/report.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/identity.hpp"

namespace tpurun::cli {
namespace {

std::chrono::seconds claim_duration(const std::string& text) {
  if (text.empty()) throw UsageError("how long? give --for DURATION, e.g. --for 3h (units: s, m, h, d)");
  std::chrono::milliseconds ms;
  try {
    ms = parse_duration(text);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("--for: {}; give a positive duration such as 3h", e.what()));
  }
  if (ms < std::chrono::seconds(1)) throw UsageError(fmt::format("--for {}: must be at least 1s, e.g. --for 3h", text));
  return std::chrono::duration_cast<std::chrono::seconds>(ms);
}

void print_warnings(const std::vector<std::string>& warnings, Context& ctx) {
  for (const std::string& w : warnings) fmt::print(ctx.err, "tpurun: warning: {}\n", w);
}

}  // namespace

CLI::App* register_claim(CLI::App& app, ClaimOptions& o) {
  CLI::App* cmd = app.add_subcommand("claim", "Tell colleagues a pod is yours for a while (stage/exec respect it)");
  cmd->add_option("pod", o.pod, "The pod to claim (a name from the config)")->required();
  cmd->add_option("--for", o.duration, "How long, e.g. 3h, 90m, 2d")->required();
  cmd->add_option("--note", o.note, "What it is for, shown to others");
  cmd->add_flag("--extend", o.extend, "You hold it already: move the end to now + --for");
  cmd->add_flag("--dry-run", o.dry_run, "Say whether the claim would be taken; take nothing");
  cmd->footer(help::kClaim);
  return cmd;
}

int run_claim(const ClaimOptions& o, Context& ctx) {
  const auto duration = claim_duration(o.duration);
  ConfigFile config = load_board_config(ctx);
  const PodConfig& pod = board_pod(config, o.pod);
  Board board(pod.logs_root);
  const auto now = WallClock::now();
  const std::string user = claim_user();
  if (o.dry_run) {
    std::vector<std::string> warnings;
    auto held = board.holder(pod.name, now, &warnings);
    print_warnings(warnings, ctx);
    if (held && (held->user != user || !o.extend)) {
      fmt::print(ctx.out, "dry run: would be refused: pod '{}' is claimed by {}\n", pod.name, claim_text(*held, now));
      return 1;
    }
    fmt::print(ctx.out, "dry run: would claim pod '{}' for {} until {}\n", pod.name, user,
               format_utc_time(now + duration));
    return 0;
  }
  ClaimOutcome out = board.claim(pod.name, user, duration, o.note, host_name(), now, o.extend);
  print_warnings(out.warnings, ctx);
  if (!out.ok && out.claim.user == user) {
    fmt::print(ctx.err, "tpurun: you already hold pod '{}': {}; use --extend to change the end, or release it\n",
               pod.name, claim_left(out.claim, now));
    return 1;
  }
  if (!out.ok) {
    fmt::print(ctx.err, "tpurun: pod '{}' is already claimed by {}\n", pod.name, claim_text(out.claim, now));
    return 1;
  }
  fmt::print(ctx.out, "claimed pod '{}' for {}: {}\n", pod.name, user, claim_left(out.claim, now));
  return 0;
}

CLI::App* register_release(CLI::App& app, ReleaseOptions& o) {
  CLI::App* cmd = app.add_subcommand("release", "End your claim on a pod before it expires");
  cmd->add_option("pod", o.pod, "The pod you claimed")->required();
  cmd->add_flag("--dry-run", o.dry_run, "Show the claim that would end; change nothing");
  return cmd;
}

int run_release(const ReleaseOptions& o, Context& ctx) {
  ConfigFile config = load_board_config(ctx);
  const PodConfig& pod = board_pod(config, o.pod);
  Board board(pod.logs_root);
  const auto now = WallClock::now();
  const std::string user = claim_user();
  auto held = board.holder(pod.name, now);
  if (!held || held->user != user) {
    fmt::print(ctx.err, "tpurun: you hold no claim on pod '{}'{}\n", pod.name,
               held ? " (it is claimed by " + claim_text(*held, now) + ")" : "");
    return 1;
  }
  if (o.dry_run) {
    fmt::print(ctx.out, "dry run: would release your claim on pod '{}' ({})\n", pod.name, claim_left(*held, now));
    return 0;
  }
  board.release(pod.name, user, now);
  fmt::print(ctx.out, "released pod '{}'\n", pod.name);
  return 0;
}

CLI::App* register_claims(CLI::App& app, ClaimsOptions& o) {
  CLI::App* cmd = app.add_subcommand("claims", "List the live claims on the config's pods");
  cmd->add_flag("--json", o.json, "One JSON record per claim");
  return cmd;
}

int run_claims(const ClaimsOptions& o, Context& ctx) {
  const ConfigFile config = load_board_config(ctx);
  const auto now = WallClock::now();
  const std::vector<Claim> claims =
      live_claims(config, now, [&](const std::string& warning) { print_warnings({warning}, ctx); });
  if (o.json) {
    nlohmann::json records = nlohmann::json::array();
    for (const Claim& c : claims) records.push_back(live_claim_to_json(c, now));
    print_json(ctx.out, records);
  } else if (claims.empty()) {
    fmt::print(ctx.out, "no live claims\n");
  } else {
    for (const Claim& c : claims) fmt::print(ctx.out, "{:<16} {}\n", c.pod, claim_text(c, now));
  }
  return 0;
}

}  // namespace tpurun::cli

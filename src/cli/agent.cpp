#include "cli/agent.hpp"

#include <fmt/format.h>

#include "cli/help_texts.hpp"
#include "tpurun/transport/keeper/keeper.hpp"
#include "tpurun/ui/report.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/usage_error.hpp"

namespace tpurun::cli {
namespace {

nlohmann::json sessions_json(const KeeperInfo& info) {
  nlohmann::json rows = nlohmann::json::array();
  for (const KeptSessionInfo& s : info.sessions) {
    rows.push_back({{"host", s.host}, {"port", s.port}, {"user", s.user}, {"alias", s.alias},
                    {"age_s", s.age_s}, {"idle_s", s.idle_s}, {"in_use", s.in_use},
                    {"peak_channels", s.peak_channels}});
  }
  return rows;
}

void print_sessions(std::FILE* out, const KeeperInfo& info) {
  for (const KeptSessionInfo& s : info.sessions) {
    const std::string where = fmt::format("{}@{}:{}", s.user, s.host, s.port);
    fmt::print(out, "  {:<32} age {:>6}  {:<14} channels at once: {}\n", where,
               format_age(static_cast<long long>(s.age_s)),
               s.in_use ? "in use" : "unused " + format_age(static_cast<long long>(s.idle_s)), s.peak_channels);
  }
}

int status(const KeeperPlace& place, bool json, Context& ctx) {
  const auto info = keeper_status(place);
  if (json) {
    nlohmann::json doc = {{"socket", place.socket}, {"log", place.log}, {"running", info.has_value()}};
    if (info) {
      doc["pid"] = info->pid;
      doc["idle_limit_s"] = info->idle_limit_s;
      doc["sessions"] = sessions_json(*info);
    }
    print_json(ctx.out, doc);
    return info ? 0 : 1;
  }
  if (!info) {
    fmt::print(ctx.out, "no keeper running ({}); the next command starts one\n", place.socket);
    return 1;
  }
  fmt::print(ctx.out, "keeper pid {}: {} session(s), each kept {} unused ({}; log {})\n", info->pid,
             info->sessions.size(), format_duration_ms(static_cast<long long>(info->idle_limit_s * 1000)),
             place.socket, place.log);
  print_sessions(ctx.out, *info);
  return 0;
}

int stop(const KeeperPlace& place, bool dry_run, bool json, Context& ctx) {
  if (dry_run) {
    const auto info = keeper_status(place);
    if (!info) {
      fmt::print(ctx.out, "dry run: no keeper running; nothing to stop\n");
      return 1;
    }
    fmt::print(ctx.out, "dry run: would stop keeper pid {} and close {} session(s):\n", info->pid,
               info->sessions.size());
    print_sessions(ctx.out, *info);
    return 0;
  }
  const auto closed = keeper_stop(place);
  if (json) {
    print_json(ctx.out, {{"stopped", closed.has_value()}, {"closed", closed.value_or(0)}});
  } else if (closed) {
    fmt::print(ctx.out, "stopped the keeper: closed {} session(s)\n", *closed);
  } else {
    fmt::print(ctx.out, "no keeper running\n");
  }
  return closed ? 0 : 1;
}

}  // namespace

CLI::App* register_agent(CLI::App& app, AgentOptions& o) {
  CLI::App* cmd = app.add_subcommand("agent", "Show (status), start or stop your connection keeper");
  cmd->add_option("action", o.action, "start, status or stop")
      ->check(CLI::IsMember({"start", "status", "stop"}))
      ->default_val("status");
  cmd->add_flag("--json", o.json, "status: print {socket, log, running, pid, idle_limit_s, sessions: [...]}");
  cmd->add_flag("--dry-run", o.dry_run, "stop: print what would be closed; close nothing");
  cmd->footer(help::kAgent);
  return cmd;
}

int run_agent(const AgentOptions& o, Context& ctx) {
  if (o.dry_run && o.action != "stop") throw UsageError("--dry-run goes with `agent stop`");
  auto place = keeper_place(ctx.env);
  if (!place) {
    fmt::print(ctx.err, "tpurun: error: no safe place for the keeper: {}\n", place.error());
    return 1;
  }
  if (o.action == "stop") return stop(*place, o.dry_run, o.json, ctx);
  if (o.action == "start") {
    const auto idle = keeper_idle(ctx.env);
    if (idle.count() == 0) throw UsageError("TPURUN_KEEP=0 turns the keeper off; unset it to start one");
    auto pid = keeper_start(*place, idle);
    if (!pid) {
      fmt::print(ctx.err, "tpurun: error: {}\n", pid.error());
      return 1;
    }
    if (o.json) {
      print_json(ctx.out, {{"pid", *pid}, {"socket", place->socket}, {"log", place->log}});
    } else {
      fmt::print(ctx.out, "keeper pid {} at {}\n", *pid, place->socket);
    }
    return 0;
  }
  return status(*place, o.json, ctx);
}

CLI::App* register_keeper(CLI::App& app, KeeperOptions& o) {
  CLI::App* cmd = app.add_subcommand("_keeper", "The connection keeper (started by the commands that use it)");
  cmd->group("");  // hidden from --help
  cmd->add_option("--idle-ms", o.idle_ms, "Close sessions unused this long, and exit once nothing is kept");
  return cmd;
}

int run_keeper_command(const KeeperOptions& o, Context& ctx) {
  auto place = keeper_place(ctx.env);
  if (!place) {
    fmt::print(stderr, "keeper: no safe place: {}\n", place.error());
    return 1;
  }
  return run_keeper(*place, std::chrono::milliseconds(o.idle_ms > 0 ? o.idle_ms : 1));
}

}  // namespace tpurun::cli

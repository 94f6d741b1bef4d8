#pragma once
// tpurun agent start|status|stop: the user's connection keeper
// (transport/keeper, docs/keeper.md); and the hidden `_keeper`, the keeper
// process itself.
#include <CLI/CLI.hpp>
#include <string>

#include "tpurun/transport/context.hpp"

namespace tpurun::cli {

struct AgentOptions {
  std::string action;  // start, status, stop
  bool json = false;
  bool dry_run = false;
};

struct KeeperOptions {
  long long idle_ms = 600000;
};

CLI::App* register_agent(CLI::App& app, AgentOptions& options);
int run_agent(const AgentOptions& options, Context& ctx);

CLI::App* register_keeper(CLI::App& app, KeeperOptions& options);
int run_keeper_command(const KeeperOptions& options, Context& ctx);

}  // namespace tpurun::cli

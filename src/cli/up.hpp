#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "cli/app.hpp"

namespace tpurun::cli {

struct UpOptions {
  bool dry_run = false;
  bool keep = false;   // leave what was made when up stops early (a waiting queued resource)
  bool setup = false;  // on a READY pod: run the setup again
  std::string max_queued;  // "30m": overrides create.max_queued
  std::string poll = "2s";  // how often gcloud is asked while waiting (hidden)
  std::string ready_timeout;  // how long PROVISIONING may take (hidden; default 30m)
  int fanout = 64;
};

CLI::App* register_up(CLI::App& app, UpOptions& options);
int run_up(const UpOptions& options, Context& ctx);

}  // namespace tpurun::cli

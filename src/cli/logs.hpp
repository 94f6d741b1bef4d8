#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "cli/app.hpp"

namespace tpurun::cli {

struct LogsOptions {
  std::string run;  // id or unique prefix; "last" for the newest
  bool follow = false;
  std::optional<int> worker;
  int fanout = 64;
  bool raw = false;
};

CLI::App* register_logs(CLI::App& app, LogsOptions& options);
int run_logs(const LogsOptions& options, Context& ctx);

}  // namespace tpurun::cli

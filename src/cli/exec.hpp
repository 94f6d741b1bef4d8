#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "tpurun/transport/context.hpp"

namespace tpurun::cli {

struct ExecOptions {
  TargetOptions target;
  bool ignore_claim = false;      // --ignore-claim: go ahead on another user's claimed pod
  std::optional<std::string> wait_pod;  // --wait [INTERVAL] for a free pod ("" when given bare)
  std::vector<std::string> argv;  // after --
  std::string script;             // --script FILE
  bool gather = false;
  bool json = false;
  bool raw = false;  // --raw / --no-collapse: every line as it comes
  bool dry_run = false;
  std::string timeout;  // --timeout DURATION, empty: none
};

CLI::App* register_exec(CLI::App& app, ExecOptions& options);
int run_exec(const ExecOptions& options, Context& ctx);

// The command line the worker's shell runs. `exec` makes the command itself
// the session's process, so Ctrl-C's signal reaches it rather than a shell.
RemoteCommand build_exec_command(const ExecOptions& options, const std::string& script_text);

}  // namespace tpurun::cli

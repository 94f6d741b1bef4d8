// tpurun _watcher: the detached per-run watcher. One per run and host: a
// lock in the user's cache makes a second one exit at once.
#include "cli/watcher.hpp"

#include <fmt/format.h>

#include "tpurun/runs/watcher/watcher_control.hpp"
#include "tpurun/runs/watcher/watcher_lock.hpp"
#include "tpurun/util/identity.hpp"

namespace tpurun::cli {

CLI::App* register_watcher(CLI::App& app, WatcherOptions& o) {
  CLI::App* cmd = app.add_subcommand("_watcher", "Watch one run (started by stage and logs -f)");
  cmd->group("");  // hidden from --help
  cmd->add_option("log_dir", o.log_dir, "The run's log dir")->required();
  return cmd;
}

int run_watcher(const WatcherOptions& o, Context& ctx) {
  RunRecord record = read_run_record(o.log_dir);
  const WatcherLock lock(record.run_id, ctx.env);
  if (lock.held_elsewhere()) {
    fmt::print("another watcher of run {} is running on this host\n", record.run_id);
    return 0;
  }
  if (!lock.held()) {
    // A run nobody watches keeps no gang rules: better two watchers than none.
    fmt::print("cannot open the watcher lock {}: {}; watching without it (make {} writable, or set "
               "XDG_CACHE_HOME)\n",
               lock.path(), lock.error(), cache_dir(ctx.env));
  }
  const WatcherSetup setup =
      watcher_setup(std::move(record), ctx, [](const std::string& line) { fmt::print("{}\n", line); });
  auto transport = ctx.make_transport(setup.pod);
  wait_for_launch();
  return watch_run(setup, *transport, ctx.processes, ctx.cancel);
}

}  // namespace tpurun::cli

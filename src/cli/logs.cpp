// tpurun logs: a run's worker logs from the shared logs root, optionally followed.
#include "cli/logs.hpp"

#include <fmt/format.h>

#include "cli/help_texts.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/runs/follow/follow.hpp"
#include "tpurun/runs/follow/log_tail.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/util/identity.hpp"

namespace tpurun::cli {

CLI::App* register_logs(CLI::App& app, LogsOptions& o) {
  CLI::App* cmd = app.add_subcommand("logs", "Show a run's worker logs, with worker prefixes");
  cmd->add_option("run", o.run, "Run id (or a unique prefix, or 'last')")->required();
  cmd->add_flag("-f,--follow", o.follow,
                "Keep printing new output until the run ends, then summarize it; starts a new watcher when the "
                "run's watcher is gone");
  cmd->add_option("-w,--worker", o.worker, "Only this worker's log");
  cmd->add_flag("--raw,--no-collapse", o.raw,
                "Print every worker's every line with its prefix (default: a line that several workers print "
                "is shown once, as [w0-7] ...; see docs/output.md)");
  cmd->footer(help::kLogs);
  return cmd;
}

int run_logs(const LogsOptions& o, Context& ctx) {
  PodConfig pod = load_pod_records(ctx);
  if (pod.logs_root.empty()) throw UsageError(fmt::format("pod '{}' has no logs_root; see docs/config.md", pod.name));
  const std::string user = local_user(ctx.env);
  const std::string dir = find_run_dir(pod.logs_root, user, o.run);
  RunRecord run = read_run_record(dir);
  std::vector<Worker> workers;
  for (const Worker& w : run.workers) {
    if (!o.worker || w.index == *o.worker) workers.push_back(w);
  }
  if (workers.empty()) {
    throw UsageError(fmt::format("run {} has no worker {} (it ran on {} workers)", run.run_id, *o.worker,
                                 run.workers.size()));
  }
  LinePrinter printer(ctx.out, ctx.err, ctx.out_is_tty, ctx.err_is_tty);
  if (!o.follow) {
    LiveOutputOptions options;
    options.collapse = !o.raw;
    options.status_line = false;
    LiveOutput live(printer, workers, options);
    LogTail follower(dir, workers, live);
    follower.finish();
    if (auto state = read_run_state(dir)) {
      for (const MissingLogs& m : state->logs_missing) fmt::print(ctx.err, "tpurun: {}\n", missing_logs_text(m));
    }
    return 0;
  }
  return follow_to_end(run, workers, printer, ctx, o.raw);
}

}  // namespace tpurun::cli

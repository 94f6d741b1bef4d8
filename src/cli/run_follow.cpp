#include "cli/run_follow.hpp"

#include <fmt/format.h>

#include "cli/report.hpp"
#include "tpurun/follow.hpp"

namespace tpurun::cli {

int follow_to_end(const std::string& run_id, const std::string& log_dir, const std::vector<Worker>& workers,
                  LinePrinter& printer, Transport& transport, int fanout, Context& ctx) {
  FollowResult result = follow_run(log_dir, workers, printer, transport, fanout, ctx.cancel);
  if (result.interrupted) {
    printer.note(fmt::format("detached from run {}; its jobs keep running.", run_id));
    printer.note(fmt::format("  reattach: tpurun logs {} -f", run_id));
    printer.note(fmt::format("  stop:     tpurun kill --run {}", run_id));
    return 130;
  }
  int code = aggregate_exit_code(result.outcomes);
  size_t ok = 0;
  for (const WorkerOutcome& o : result.outcomes) ok += o.ok() ? 1 : 0;
  printer.note(fmt::format("run {}: {} of {} workers exited 0", run_id, ok, result.outcomes.size()));
  print_failure_summary(printer, result.outcomes);
  return code;
}

}  // namespace tpurun::cli

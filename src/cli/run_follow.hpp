#pragma once
// Following a run to its end, shared by `stage` and `logs -f`.
#include <string>
#include <vector>

#include "cli/context.hpp"
#include "tpurun/outcome.hpp"
#include "tpurun/printer.hpp"
#include "tpurun/transport.hpp"

namespace tpurun::cli {

// Tails the workers' logs until every job has ended; prints the per-worker
// summary; returns the aggregated exit code. On Ctrl-C it detaches (the jobs
// keep running), says how to reattach and stop, and returns 130.
int follow_to_end(const std::string& run_id, const std::string& log_dir, const std::vector<Worker>& workers,
                  LinePrinter& printer, Transport& transport, int fanout, Context& ctx);

}  // namespace tpurun::cli

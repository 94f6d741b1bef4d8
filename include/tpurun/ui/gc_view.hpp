#pragma once
// How `tpurun gc` reports: what was (or would be) removed here and kept for a
// run, the totals, then a line per worker of a pod with no shared mount; and
// the --json form.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "tpurun/staging/gc.hpp"
#include "tpurun/staging/worker_gc.hpp"

namespace tpurun {

using WorkerGcReports = std::vector<std::pair<Worker, WorkerGcReport>>;

// Errors go to `err`, the rest to `out`.
void print_gc_report(std::FILE* out, std::FILE* err, const GcReport& report, const WorkerGcReports& on_workers,
                     bool dry_run);
// {dry_run, snapshots_removed, kept: [{snapshot, runs: [{run_id, state}]}], temps_removed,
//  objects_removed, bytes_freed, errors, workers: [{worker, host, snapshots_removed, ...}]}
nlohmann::json gc_report_to_json(const GcReport& report, const WorkerGcReports& on_workers, bool dry_run);

}  // namespace tpurun

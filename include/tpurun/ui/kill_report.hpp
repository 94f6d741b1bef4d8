#pragma once
// How `tpurun kill` reports: per worker, what was (or, for a dry run, would
// be) signalled and removed and whose processes were left alone; then the
// final state of every worker grouped like `tpurun status`.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tpurun/tpu/kill.hpp"

namespace tpurun {

std::string format_kill_report(const std::vector<WorkerKill>& reports, const KillRequest& request,
                               bool color);
nlohmann::json kill_report_to_json(const WorkerKill& report, bool dry_run);
// Like status's: 0 when every worker ended free. A dry run fails only when it could not look.
int kill_exit_code(const std::vector<WorkerKill>& reports, bool dry_run);

}  // namespace tpurun

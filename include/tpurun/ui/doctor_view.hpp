#pragma once
// How `tpurun doctor` reports: a line per problem with where it is and its
// fix, a closing count (or "no problems found"), and the --json form.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tpurun/doctor/doctor.hpp"

namespace tpurun {

// "error   w[0-3]: ...\n        fix: ..." per finding.
std::string format_findings(const std::vector<Finding>& findings);
// "doctor: pod 'P', 4 workers", the findings, then "1 error, 2 warnings";
// on a pod without a shared mount, what each worker's disk holds of tpurun's
// (workers with the same figures on one line).
std::string format_doctor_report(const std::string& pod, size_t workers, const std::vector<Finding>& findings,
                                 const std::vector<WorkerFacts>& facts = {});
// {pod, workers, ok, problems: [{severity, check, workers, problem, fix}],
//  disk: [{worker, staging_kib, logs_kib}] (no shared mount)}
nlohmann::json findings_to_json(const std::string& pod, size_t workers, const std::vector<Finding>& findings,
                                const std::vector<WorkerFacts>& facts = {});
// How many findings are errors (doctor exits 1 when any is).
size_t error_count(const std::vector<Finding>& findings);

}  // namespace tpurun

#pragma once
// Shared ways of reporting per-worker outcomes: the failure summary on stderr
// and the --json form.
#include <nlohmann/json.hpp>
#include <vector>

#include "tpurun/fanout/printer.hpp"
#include "tpurun/transport/outcome.hpp"

namespace tpurun {

nlohmann::json outcome_to_json(const WorkerOutcome& outcome);
// {"worker": N, "host": H}, plus "slice" and "slice_worker" on a multi-slice pod.
nlohmann::json worker_json(const Worker& worker);
// One "tpurun: w2 127.0.1.3: ..." line per worker that did not exit 0.
void print_failure_summary(LinePrinter& printer, const std::vector<WorkerOutcome>& outcomes);
// Serialises with invalid UTF-8 replaced, since remote output can hold any bytes.
void print_json(std::FILE* out, const nlohmann::json& doc);

}  // namespace tpurun

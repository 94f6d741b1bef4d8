#pragma once
// One look at the workers for `tpurun top`: on each worker's connection, the
// status scan (who holds the TPU) and then libtpu's metrics (how busy its
// chips are, metrics.hpp), as one value per worker; and the pod's summary.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/tpu/metrics.hpp"
#include "tpurun/tpu/scan.hpp"

namespace tpurun {

struct WorkerLook {
  WorkerScanResult scan;                     // state `unreachable`: nothing else was asked
  std::optional<TpuMetricsOutcome> metrics;  // absent when the worker could not be reached
};

struct TopRequest {
  std::vector<std::string> device_globs;
  MetricsEndpoint endpoint;
  int fanout = 64;
};

// The metrics outcome in the light of the scan: on a worker where nothing
// holds the TPU, UNAVAILABLE is "no TPU workload" (a gRPC client sees it when
// nothing listens, and a metrics service may give it for a host with no
// workload); where a holder runs, a failing service stays a failure.
TpuMetricsOutcome judge_metrics(const WorkerScanResult& scan, TpuMetricsOutcome metrics);

// Every worker at once (at most `fanout`), results in worker order;
// on_done(i, look) as each worker answers.
std::vector<WorkerLook> look_at_workers(const std::vector<Worker>& workers, Transport& transport,
                                        const TopRequest& request, const CancelToken& cancel,
                                        const std::function<void(size_t, const WorkerLook&)>& on_done = {});

// The pod at a glance: duty cycle over every chip that reported one, the
// worker with the least busy chip, and HBM summed over all chips.
struct TopSummary {
  int workers = 0;
  int with_figures = 0;  // the service answered
  int no_workload = 0;
  int failed = 0;        // unreachable, or the scan or the service failed
  int chips = 0;         // chips with a duty cycle
  std::optional<double> duty_mean;
  std::optional<double> duty_min;
  std::optional<Worker> least_busy;  // where duty_min is (the first such worker)
  int64_t hbm_used_bytes = 0;
  int64_t hbm_total_bytes = 0;
};
TopSummary summarize_top(const std::vector<WorkerLook>& looks);

// 0 when every worker answered (figures or no workload); 1 when the metrics
// service failed on some worker; 255 when a worker could not be reached or
// scanned; 130 after Ctrl-C.
int top_exit_code(const std::vector<WorkerLook>& looks, bool cancelled);

}  // namespace tpurun

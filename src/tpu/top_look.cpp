// look_at_workers: the scan and the metrics on one connection per worker, so
// a refresh costs each worker one SSH handshake (none with kept connections).
#include "tpurun/tpu/top_look.hpp"

#include <mutex>

#include "tpurun/fanout/fanout.hpp"

namespace tpurun {

TpuMetricsOutcome judge_metrics(const WorkerScanResult& scan, TpuMetricsOutcome metrics) {
  const auto* failure = std::get_if<MetricsFailure>(&metrics);
  if (failure == nullptr || failure->grpc != GrpcCode::unavailable || !scan.scan) return metrics;
  const LockScan& s = *scan.scan;
  const bool held = !s.holders.empty() || (s.lockfile.exists && s.lockfile.held);
  if (held) return metrics;
  return NoTpuWorkload{failure->message};
}

std::vector<WorkerLook> look_at_workers(const std::vector<Worker>& workers, Transport& transport,
                                        const TopRequest& request, const CancelToken& cancel,
                                        const std::function<void(size_t, const WorkerLook&)>& on_done) {
  const ScanRequest scan_request{request.device_globs, false};
  std::vector<WorkerLook> looks(workers.size());
  std::mutex mu;  // on_done is called from the fan-out's threads
  run_parallel(workers.size(), request.fanout, [&](size_t i) {
    WorkerLook look;
    look.scan = {workers[i], TpuState::unreachable, std::nullopt, ""};
    auto connection = transport.connect(workers[i], cancel);
    if (!connection) {
      look.scan.error = connection.error().message;
    } else {
      auto scanned = scan_connection(**connection, workers[i], scan_request, cancel);
      if (!scanned) {
        look.scan.error = scanned.error().message;
      } else {
        look.scan = std::move(*scanned);
        look.metrics = judge_metrics(look.scan, fetch_tpu_metrics(**connection, request.endpoint, cancel));
      }
    }
    looks[i] = look;
    if (on_done) {
      std::lock_guard lock(mu);
      on_done(i, looks[i]);
    }
  });
  return looks;
}

TopSummary summarize_top(const std::vector<WorkerLook>& looks) {
  TopSummary s;
  s.workers = static_cast<int>(looks.size());
  double duty_sum = 0;
  for (const WorkerLook& look : looks) {
    const bool failed = !look.metrics || look.scan.state == TpuState::error ||
                        std::holds_alternative<MetricsFailure>(*look.metrics);
    if (failed) ++s.failed;
    if (!look.metrics) continue;
    if (std::holds_alternative<NoTpuWorkload>(*look.metrics)) ++s.no_workload;
    const auto* figures = std::get_if<TpuFigures>(&*look.metrics);
    if (figures == nullptr) continue;
    ++s.with_figures;
    for (const ChipFigures& chip : figures->chips) {
      s.hbm_used_bytes += chip.hbm_used_bytes.value_or(0);
      s.hbm_total_bytes += chip.hbm_total_bytes.value_or(0);
      if (!chip.duty_cycle_pct) continue;
      ++s.chips;
      duty_sum += *chip.duty_cycle_pct;
      if (!s.duty_min || *chip.duty_cycle_pct < *s.duty_min) {
        s.duty_min = *chip.duty_cycle_pct;
        s.least_busy = look.scan.worker;
      }
    }
  }
  if (s.chips > 0) s.duty_mean = duty_sum / s.chips;
  return s;
}

int top_exit_code(const std::vector<WorkerLook>& looks, bool cancelled) {
  if (cancelled) return 130;
  int code = 0;
  for (const WorkerLook& look : looks) {
    if (!look.metrics || look.scan.state == TpuState::error) return 255;
    if (std::holds_alternative<MetricsFailure>(*look.metrics)) code = 1;
  }
  return code;
}

}  // namespace tpurun

// fetch_tpu_metrics: one worker, one stream, one HTTP/2 round trip.
#include <fmt/format.h>

#include "tpurun/tpu/metrics.hpp"

namespace tpurun {

TpuMetricsOutcome fetch_tpu_metrics(Connection& connection, const MetricsEndpoint& endpoint,
                                    const CancelToken& cancel) {
  auto stream = connection.open_stream(endpoint.host, endpoint.port, cancel);
  if (!stream) {
    // libtpu starts the service with the runtime and stops it with the
    // process: no listener means no workload (tpu-info: "Libtpu metrics
    // unavailable. Is there a framework using the TPU?").
    if (stream.error().kind == ErrorKind::refused) return NoTpuWorkload{stream.error().message};
    return MetricsFailure{stream.error().message, stream.error().kind, std::nullopt};
  }
  const std::vector<GrpcCall> calls = {
      {kRuntimeMetricMethod, encode_metric_request(kHbmUsageMetric)},
      {kRuntimeMetricMethod, encode_metric_request(kHbmTotalMetric)},
      {kRuntimeMetricMethod, encode_metric_request(kDutyCycleMetric)},
  };
  GrpcOptions options;
  options.authority = fmt::format("{}:{}", endpoint.host, endpoint.port);
  options.deadline_ms = endpoint.deadline_ms;
  auto replies = grpc_unary_calls(**stream, calls, options, cancel);
  if (!replies) return MetricsFailure{replies.error().message, replies.error().kind, std::nullopt};
  return metrics_outcome_from(*replies);
}

}  // namespace tpurun

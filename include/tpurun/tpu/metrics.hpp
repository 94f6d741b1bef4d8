#pragma once
// libtpu's runtime metrics, as tpu-info reads them: the gRPC service
// tpu.monitoring.runtime.RuntimeMetricService on the worker's localhost:8431
// (proto/libtpu_metrics.proto, the project's own), reached through the
// worker's SSH session. libtpu serves it only while a workload runs, so a
// refused connection is "no TPU workload", not a fault. docs/top.md.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tpurun/transport/grpc_call.hpp"
#include "tpurun/transport/outcome.hpp"
#include "tpurun/transport/transport.hpp"
#include "tpurun/util/cancel.hpp"
#include "tpurun/util/result.hpp"

namespace tpurun {

// tpu-info's MetricName (tpu_info/metrics.py). Memory is in bytes (as_int),
// the duty cycle in percent (as_double); every value names its device by an
// int "device-id" attribute.
inline constexpr const char* kHbmUsageMetric = "tpu.runtime.hbm.memory.usage.bytes";
inline constexpr const char* kHbmTotalMetric = "tpu.runtime.hbm.memory.total.bytes";
inline constexpr const char* kDutyCycleMetric = "tpu.runtime.tensorcore.dutycycle.percent";
inline constexpr const char* kRuntimeMetricMethod = "/tpu.monitoring.runtime.RuntimeMetricService/GetRuntimeMetric";
inline constexpr int kLibtpuMetricsPort = 8431;

// ---- the messages (hand-decoded; test vectors come from the real .proto)

// One Metric of a TPUMetric: its attribute and its gauge value.
struct MetricSample {
  std::string attribute_key;             // "device-id"
  std::optional<int64_t> device_id;      // the attribute's int_attr (or a string_attr of digits)
  std::variant<std::monostate, int64_t, double, std::string, bool> gauge;  // monostate: no gauge
};

struct DecodedMetric {
  std::string name;
  std::string description;
  std::vector<MetricSample> samples;
};

// MetricRequest{metric_name}, serialized.
std::string encode_metric_request(std::string_view metric_name);
// MetricResponse, parsed; the error says what was malformed.
Result<DecodedMetric, std::string> decode_metric_response(std::string_view bytes);

// ---- one worker's answer

struct ChipFigures {
  int64_t device_id = 0;
  std::optional<int64_t> hbm_used_bytes;
  std::optional<int64_t> hbm_total_bytes;
  std::optional<double> duty_cycle_pct;
};

struct TpuFigures {
  std::vector<ChipFigures> chips;  // by device id
  std::vector<std::string> notes;  // a metric that failed while the others answered
};

// Nothing listens on the port: libtpu runs no workload there.
struct NoTpuWorkload {
  std::string detail;
};

struct MetricsFailure {
  std::string message;                 // what failed, for the worker's row
  std::optional<ErrorKind> transport;  // the SSH side failed
  std::optional<GrpcCode> grpc;        // the service answered with this status
};

using TpuMetricsOutcome = std::variant<TpuFigures, NoTpuWorkload, MetricsFailure>;

// Rows from the three metrics (any may be missing). Duty cycle is per chip;
// where memory is per core (two devices per chip, as on v2/v3), each chip's
// duty cycle is repeated for its cores, as tpu-info does.
std::vector<ChipFigures> join_chip_figures(const DecodedMetric* usage, const DecodedMetric* total,
                                           const DecodedMetric* duty);

// Turns the three replies (usage, total, duty cycle, in that order) into the
// worker's outcome.
TpuMetricsOutcome metrics_outcome_from(const std::vector<GrpcReply>& replies);

struct MetricsEndpoint {
  std::string host = "localhost";  // as the worker resolves it; tpu-info uses localhost:8431
  int port = kLibtpuMetricsPort;
  int deadline_ms = 5000;
};

// One worker: a stream to the service through `connection`, the three
// GetRuntimeMetric calls at once on it, one outcome.
TpuMetricsOutcome fetch_tpu_metrics(Connection& connection, const MetricsEndpoint& endpoint,
                                    const CancelToken& cancel);

}  // namespace tpurun

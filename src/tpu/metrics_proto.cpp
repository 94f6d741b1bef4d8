// MetricRequest and MetricResponse of libtpu's RuntimeMetricService
// (proto/libtpu_metrics.proto, the project's own), by field number. Parsing
// follows protobuf's rules: unknown fields (and known numbers with another
// wire type) are skipped, a repeated occurrence of a message field merges
// into the first, and a oneof keeps its last member.
#include <fmt/format.h>

#include "tpu/protobuf_wire.hpp"
#include "tpurun/tpu/metrics.hpp"

namespace tpurun {
namespace {

using wire::Field;
using wire::Reader;

// AttrValue: string_attr = 1, int_attr = 3 (others leave no device id).
bool parse_attr_value(std::string_view bytes, std::optional<int64_t>& device_id, std::string& error) {
  Reader r(bytes);
  Field f;
  while (r.next(f)) {
    if (f.number == 3 && f.type == wire::varint) {
      device_id = wire::as_int64(f.value);
    } else if (f.number == 1 && f.type == wire::length_delimited) {
      // Newer libtpu sends some ordinals as strings of digits (tpu-info metrics.py).
      device_id.reset();
      if (!f.data.empty() && f.data.size() < 19 &&
          f.data.find_first_not_of("0123456789") == std::string_view::npos) {
        device_id = std::stoll(std::string(f.data));
      }
    } else if (f.number >= 2 && f.number <= 7) {
      device_id.reset();  // another member of the oneof
    }
  }
  error = r.error();
  return error.empty();
}

// Attribute: key = 1, value = 2.
bool parse_attribute(std::string_view bytes, MetricSample& s, std::string& error) {
  Reader r(bytes);
  Field f;
  while (r.next(f)) {
    if (f.type != wire::length_delimited) continue;
    if (f.number == 1) s.attribute_key = f.data;
    if (f.number == 2 && !parse_attr_value(f.data, s.device_id, error)) return false;
  }
  error = r.error();
  return error.empty();
}

// Gauge: oneof as_double = 1, as_int = 2, as_string = 3, as_bool = 4.
bool parse_gauge(std::string_view bytes, MetricSample& s, std::string& error) {
  Reader r(bytes);
  Field f;
  while (r.next(f)) {
    if (f.number == 1 && f.type == wire::fixed64) s.gauge = wire::as_double(f.value);
    if (f.number == 2 && f.type == wire::varint) s.gauge = wire::as_int64(f.value);
    if (f.number == 3 && f.type == wire::length_delimited) s.gauge = std::string(f.data);
    if (f.number == 4 && f.type == wire::varint) s.gauge = f.value != 0;
  }
  error = r.error();
  return error.empty();
}

// Metric: attribute = 1, timestamp = 2, oneof measure {gauge = 3, counter = 4,
// distribution = 5, summary = 6}, start_timestamp = 7.
bool parse_metric(std::string_view bytes, MetricSample& s, std::string& error) {
  Reader r(bytes);
  Field f;
  while (r.next(f)) {
    if (f.type != wire::length_delimited) continue;
    if (f.number == 1 && !parse_attribute(f.data, s, error)) return false;
    if (f.number == 3 && !parse_gauge(f.data, s, error)) return false;
    if (f.number >= 4 && f.number <= 6) s.gauge = std::monostate{};  // another measure than a gauge
  }
  error = r.error();
  return error.empty();
}

// TPUMetric: name = 1, description = 2, repeated metrics = 3.
bool parse_tpu_metric(std::string_view bytes, DecodedMetric& m, std::string& error) {
  Reader r(bytes);
  Field f;
  while (r.next(f)) {
    if (f.type != wire::length_delimited) continue;
    if (f.number == 1) m.name = f.data;
    if (f.number == 2) m.description = f.data;
    if (f.number == 3) {
      MetricSample s;
      if (!parse_metric(f.data, s, error)) {
        error = fmt::format("metric value {}: {}", m.samples.size(), error);
        return false;
      }
      m.samples.push_back(std::move(s));
    }
  }
  error = r.error();
  return error.empty();
}

}  // namespace

std::string encode_metric_request(std::string_view metric_name) {
  std::string out;
  wire::put_string(out, 1, metric_name);  // metric_name = 1; skip_node_aggregation = 2 stays false, as tpu-info sends it
  return out;
}

Result<DecodedMetric, std::string> decode_metric_response(std::string_view bytes) {
  DecodedMetric m;
  std::string error;
  Reader r(bytes);
  Field f;
  while (r.next(f)) {
    // MetricResponse: metric = 1 (a TPUMetric).
    if (f.number == 1 && f.type == wire::length_delimited && !parse_tpu_metric(f.data, m, error)) {
      return unexpected("malformed MetricResponse: " + error);
    }
  }
  if (!r.error().empty()) return unexpected("malformed MetricResponse: " + r.error());
  return m;
}

}  // namespace tpurun

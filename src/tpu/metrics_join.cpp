// From libtpu's three metrics to one row per device, and from the three gRPC
// replies to the worker's outcome.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "tpurun/tpu/metrics.hpp"

namespace tpurun {
namespace {

struct Keyed {
  int64_t id;
  const MetricSample* sample;
};

// By device id; a value without one takes its position (libtpu always sends one).
std::vector<Keyed> keyed(const DecodedMetric* m) {
  std::vector<Keyed> out;
  if (m == nullptr) return out;
  for (size_t i = 0; i < m->samples.size(); ++i) {
    out.push_back({m->samples[i].device_id.value_or(static_cast<int64_t>(i)), &m->samples[i]});
  }
  std::stable_sort(out.begin(), out.end(), [](const Keyed& a, const Keyed& b) { return a.id < b.id; });
  return out;
}

std::optional<int64_t> int_value(const MetricSample& s) {
  if (auto* i = std::get_if<int64_t>(&s.gauge)) return *i;
  if (auto* d = std::get_if<double>(&s.gauge)) return static_cast<int64_t>(std::llround(*d));
  return std::nullopt;
}

std::optional<double> double_value(const MetricSample& s) {
  if (auto* d = std::get_if<double>(&s.gauge)) return *d;
  if (auto* i = std::get_if<int64_t>(&s.gauge)) return static_cast<double>(*i);
  return std::nullopt;
}

const char* short_name(size_t i) {
  static const char* const names[] = {"HBM usage", "HBM total", "duty cycle"};
  return i < 3 ? names[i] : "metric";
}

}  // namespace

std::vector<ChipFigures> join_chip_figures(const DecodedMetric* usage, const DecodedMetric* total,
                                           const DecodedMetric* duty) {
  std::map<int64_t, ChipFigures> rows;
  for (const Keyed& k : keyed(usage)) {
    rows[k.id].device_id = k.id;
    rows[k.id].hbm_used_bytes = int_value(*k.sample);
  }
  for (const Keyed& k : keyed(total)) {
    rows[k.id].device_id = k.id;
    rows[k.id].hbm_total_bytes = int_value(*k.sample);
  }
  const std::vector<Keyed> duties = keyed(duty);
  if (!rows.empty() && !duties.empty() && rows.size() > duties.size() && rows.size() % duties.size() == 0) {
    // Memory per core, duty cycle per chip (tpu-info's get_chip_usage repeats
    // each chip's figure for its devices_per_chip cores).
    const size_t per_chip = rows.size() / duties.size();
    size_t i = 0;
    for (auto& [id, row] : rows) row.duty_cycle_pct = double_value(*duties[i++ / per_chip].sample);
  } else {
    for (const Keyed& k : duties) {
      rows[k.id].device_id = k.id;
      rows[k.id].duty_cycle_pct = double_value(*k.sample);
    }
  }
  std::vector<ChipFigures> out;
  for (auto& [id, row] : rows) out.push_back(row);
  return out;
}

TpuMetricsOutcome metrics_outcome_from(const std::vector<GrpcReply>& replies) {
  std::vector<std::optional<DecodedMetric>> decoded(3);
  std::vector<std::string> notes;
  std::optional<MetricsFailure> first_failure;
  for (size_t i = 0; i < replies.size() && i < 3; ++i) {
    const GrpcReply& reply = replies[i];
    if (!reply.status.ok()) {
      const std::string what = fmt::format("{}: {}{}{}", short_name(i), grpc_code_name(reply.status.code),
                                           reply.status.message.empty() ? "" : ": ", reply.status.message);
      notes.push_back(what);
      if (!first_failure) first_failure = MetricsFailure{"libtpu's metrics service: " + what, std::nullopt, reply.status.code};
      continue;
    }
    auto metric = decode_metric_response(reply.response);
    if (!metric) {
      const std::string what = fmt::format("{}: {}", short_name(i), metric.error());
      notes.push_back(what);
      if (!first_failure) first_failure = MetricsFailure{"libtpu's metrics service: " + what, std::nullopt, std::nullopt};
      continue;
    }
    decoded[i] = std::move(*metric);
  }
  if (!decoded[0] && !decoded[1] && !decoded[2]) {
    if (first_failure) return *first_failure;
    return MetricsFailure{"libtpu's metrics service sent no replies", std::nullopt, std::nullopt};
  }
  const auto ptr = [&](size_t i) { return decoded[i] ? &*decoded[i] : nullptr; };
  return TpuFigures{join_chip_figures(ptr(0), ptr(1), ptr(2)), std::move(notes)};
}

}  // namespace tpurun

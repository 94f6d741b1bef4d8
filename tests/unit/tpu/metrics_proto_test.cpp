// libtpu's metric messages, decoded from bytes the real protobuf runtime made
// from the real .proto (metrics_vectors/make_vectors.py; each NAME.bin has a
// NAME.txt beside it in text format).
#include <gtest/gtest.h>

#include "tpurun/tpu/metrics.hpp"
#include "vector_files.hpp"

namespace tpurun {
namespace {

std::string vector_bytes(const std::string& name) { return testing::vector_bytes("metrics_vectors", name); }

DecodedMetric decoded(const std::string& name) {
  auto m = decode_metric_response(vector_bytes(name));
  EXPECT_TRUE(m.ok()) << name << ": " << (m.ok() ? "" : m.error());
  return m.ok() ? *m : DecodedMetric{};
}

TEST(MetricsProtoTest, RequestsAreByteForByteWhatProtobufWrites) {
  EXPECT_EQ(encode_metric_request(kHbmUsageMetric), vector_bytes("request_usage"));
  EXPECT_EQ(encode_metric_request(kHbmTotalMetric), vector_bytes("request_total"));
  EXPECT_EQ(encode_metric_request(kDutyCycleMetric), vector_bytes("request_duty"));
}

TEST(MetricsProtoTest, UsageOfFourChipsWithDeviceIdsAndIntGauges) {
  DecodedMetric m = decoded("usage_v4");
  EXPECT_EQ(m.name, kHbmUsageMetric);
  ASSERT_EQ(m.samples.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(m.samples[i].attribute_key, "device-id");
    ASSERT_TRUE(m.samples[i].device_id.has_value());
    EXPECT_EQ(*m.samples[i].device_id, i);
    ASSERT_TRUE(std::holds_alternative<int64_t>(m.samples[i].gauge)) << i;
    EXPECT_EQ(std::get<int64_t>(m.samples[i].gauge), 8522039296LL * i);
  }
}

TEST(MetricsProtoTest, TotalsAndDutyCycleDoubles) {
  DecodedMetric total = decoded("total_v4");
  ASSERT_EQ(total.samples.size(), 4u);
  EXPECT_EQ(std::get<int64_t>(total.samples[3].gauge), 34088157184LL);
  DecodedMetric duty = decoded("duty_v4");
  EXPECT_EQ(duty.name, kDutyCycleMetric);
  ASSERT_EQ(duty.samples.size(), 4u);
  const double expected[] = {0.0, 25.0, 50.0, 100.0};
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(std::holds_alternative<double>(duty.samples[i].gauge)) << i;
    EXPECT_DOUBLE_EQ(std::get<double>(duty.samples[i].gauge), expected[i]);
  }
}

TEST(MetricsProtoTest, StringDeviceIdsAndOrderAsSent) {
  DecodedMetric m = decoded("duty_unordered");
  ASSERT_EQ(m.samples.size(), 3u);
  EXPECT_EQ(m.samples[0].device_id, 3);
  EXPECT_EQ(m.samples[1].device_id, 1);
  EXPECT_EQ(m.samples[2].device_id, 2);  // string_attr "2"
  EXPECT_DOUBLE_EQ(std::get<double>(m.samples[2].gauge), 2.5);
}

TEST(MetricsProtoTest, NegativeIntsDescriptionsAndValuesWithoutAGauge) {
  DecodedMetric m = decoded("edge_values");
  EXPECT_EQ(m.description, "HBM in use");
  ASSERT_EQ(m.samples.size(), 3u);
  EXPECT_EQ(std::get<int64_t>(m.samples[0].gauge), -1);  // a 10-byte varint
  EXPECT_TRUE(std::holds_alternative<std::monostate>(m.samples[1].gauge));  // a distribution, skipped
  EXPECT_EQ(m.samples[1].device_id, 0);
  EXPECT_EQ(std::get<bool>(m.samples[2].gauge), true);
  EXPECT_EQ(m.samples[2].device_id, 7);
}

TEST(MetricsProtoTest, NoValuesAndTheEmptyMessage) {
  DecodedMetric none = decoded("no_values");
  EXPECT_EQ(none.name, kDutyCycleMetric);
  EXPECT_TRUE(none.samples.empty());
  EXPECT_TRUE(vector_bytes("empty").empty());
  DecodedMetric empty = decoded("empty");
  EXPECT_TRUE(empty.name.empty());
  EXPECT_TRUE(empty.samples.empty());
}

// Given any cut of a real response, the decoder says "malformed" or returns
// what it read; it never reads past the end.
TEST(MetricsProtoTest, EveryTruncationIsAnErrorOrAPrefix) {
  const std::string bytes = vector_bytes("edge_values");
  int errors = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto m = decode_metric_response(std::string_view(bytes).substr(0, n));
    if (!m) {
      ++errors;
      EXPECT_NE(m.error().find("malformed MetricResponse"), std::string::npos) << m.error();
    }
  }
  // The response is one field, so every cut inside it is malformed.
  EXPECT_EQ(errors, static_cast<int>(bytes.size()) - 1);
}

TEST(MetricsProtoTest, ProtobufsMergeRulesForRepeatedFields) {
  // Two occurrences of MetricResponse.metric merge: the name's last value
  // wins and the metrics are appended.
  std::string twice = vector_bytes("duty_v4") + vector_bytes("duty_unordered");
  auto m = decode_metric_response(twice);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->samples.size(), 7u);
}

TEST(MetricsProtoTest, UnknownFieldsAreSkippedAndBadWireTypesRefused) {
  // MetricResponse{ 99: varint 5, 98: fixed32, metric{name "x"} }
  std::string bytes = std::string("\x98\x06\x05", 3) + std::string("\x95\x06\x01\x02\x03\x04", 6) +
                      std::string("\x0a\x03\x0a\x01x", 5);
  auto m = decode_metric_response(bytes);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->name, "x");
  // Wire type 3 (a proto2 group) does not occur in proto3.
  auto bad = decode_metric_response(std::string("\x0b", 1));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("wire type 3"), std::string::npos) << bad.error();
  // A length past the end.
  auto cut = decode_metric_response(std::string("\x0a\x10\x0a", 3));
  ASSERT_FALSE(cut.ok());
}

}  // namespace
}  // namespace tpurun

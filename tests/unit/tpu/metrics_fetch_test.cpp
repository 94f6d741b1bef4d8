// One worker's metrics: the three calls on one stream, and what becomes of
// the replies: figures per chip, "no TPU workload", or an error.
#include <gtest/gtest.h>

#include "fake_transport.hpp"
#include "fakes/grpc_test_server.hpp"
#include "tpurun/tpu/metrics.hpp"
#include "vector_files.hpp"

namespace tpurun {
namespace {

using testing::FakeTransport;
using testing::GrpcTestServer;
using testing::grpc_frame;
using testing::ReceivedRequest;
using testing::ServerReply;

std::string vector_bytes(const std::string& name) { return testing::vector_bytes("metrics_vectors", name); }

// libtpu as the vectors have it: a v4 host with four chips.
ServerReply libtpu_v4(const ReceivedRequest& r) {
  ServerReply reply;
  if (r.message == vector_bytes("request_usage")) reply.body = grpc_frame(vector_bytes("usage_v4"));
  else if (r.message == vector_bytes("request_total")) reply.body = grpc_frame(vector_bytes("total_v4"));
  else if (r.message == vector_bytes("request_duty")) reply.body = grpc_frame(vector_bytes("duty_v4"));
  else reply.trailers = {{"grpc-status", "5"}, {"grpc-message", "unknown metric"}};
  return reply;
}

TpuMetricsOutcome fetch_with(FakeTransport& transport) {
  auto connection = transport.connect(testing::make_workers(1)[0], CancelToken());
  EXPECT_TRUE(connection.ok());
  return fetch_tpu_metrics(**connection, MetricsEndpoint{}, CancelToken());
}

TEST(MetricsFetchTest, FiguresPerChipFromOneStream) {
  GrpcTestServer server(libtpu_v4);
  FakeTransport transport;
  transport.behaviour[0].stream = [&](const std::string&, int) -> Result<std::unique_ptr<ByteStream>, TransportError> {
    return server.client_stream();
  };
  TpuMetricsOutcome outcome = fetch_with(transport);

  ASSERT_TRUE(std::holds_alternative<TpuFigures>(outcome));
  const TpuFigures& figures = std::get<TpuFigures>(outcome);
  EXPECT_TRUE(figures.notes.empty());
  ASSERT_EQ(figures.chips.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(figures.chips[i].device_id, i);
    EXPECT_EQ(figures.chips[i].hbm_used_bytes, 8522039296LL * i);
    EXPECT_EQ(figures.chips[i].hbm_total_bytes, 34088157184LL);
  }
  EXPECT_EQ(figures.chips[0].duty_cycle_pct, 0.0);
  EXPECT_EQ(figures.chips[3].duty_cycle_pct, 100.0);
  // One stream, to tpu-info's address, three calls on it.
  auto opened = transport.streams_opened();
  ASSERT_EQ(opened.size(), 1u);
  EXPECT_EQ(opened[0].host, "localhost");
  EXPECT_EQ(opened[0].port, 8431);
  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].header(":path"), "/tpu.monitoring.runtime.RuntimeMetricService/GetRuntimeMetric");
}

TEST(MetricsFetchTest, RefusedMeansNoWorkload) {
  FakeTransport transport;  // streams are refused unless scripted
  TpuMetricsOutcome outcome = fetch_with(transport);
  ASSERT_TRUE(std::holds_alternative<NoTpuWorkload>(outcome));
  EXPECT_NE(std::get<NoTpuWorkload>(outcome).detail.find("8431"), std::string::npos);
}

TEST(MetricsFetchTest, ABrokenSessionIsAnError) {
  FakeTransport transport;
  transport.behaviour[0].stream = [](const std::string&, int) -> Result<std::unique_ptr<ByteStream>, TransportError> {
    return unexpected(TransportError{ErrorKind::channel, "cannot open a channel"});
  };
  TpuMetricsOutcome outcome = fetch_with(transport);
  ASSERT_TRUE(std::holds_alternative<MetricsFailure>(outcome));
  EXPECT_EQ(std::get<MetricsFailure>(outcome).transport, ErrorKind::channel);
}

TEST(MetricsFetchTest, AServiceThatAnswersOnlyErrors) {
  GrpcTestServer server([](const ReceivedRequest&) {
    ServerReply reply;
    reply.trailers_only = true;
    reply.trailers = {{"grpc-status", "14"}, {"grpc-message", "runtime shutting down"}};
    return reply;
  });
  FakeTransport transport;
  transport.behaviour[0].stream = [&](const std::string&, int) -> Result<std::unique_ptr<ByteStream>, TransportError> {
    return server.client_stream();
  };
  TpuMetricsOutcome outcome = fetch_with(transport);
  ASSERT_TRUE(std::holds_alternative<MetricsFailure>(outcome));
  const MetricsFailure& failure = std::get<MetricsFailure>(outcome);
  EXPECT_EQ(failure.grpc, GrpcCode::unavailable);
  EXPECT_NE(failure.message.find("UNAVAILABLE: runtime shutting down"), std::string::npos) << failure.message;
}

// ---- joining the three metrics

DecodedMetric from_vector(const std::string& name) { return *decode_metric_response(vector_bytes(name)); }

TEST(MetricsJoinTest, PerCoreMemoryRepeatsTheChipsDutyCycle) {
  DecodedMetric usage = from_vector("usage_v3_cores");
  DecodedMetric duty = from_vector("duty_v3_chips");
  auto rows = join_chip_figures(&usage, nullptr, &duty);
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[0].duty_cycle_pct, 10.0);
  EXPECT_EQ(rows[1].duty_cycle_pct, 10.0);
  EXPECT_EQ(rows[6].duty_cycle_pct, 40.0);
  EXPECT_EQ(rows[7].duty_cycle_pct, 40.0);
  EXPECT_FALSE(rows[0].hbm_total_bytes.has_value());
}

TEST(MetricsJoinTest, RowsAreByDeviceIdWhateverTheOrderSent) {
  DecodedMetric duty = from_vector("duty_unordered");
  auto rows = join_chip_figures(nullptr, nullptr, &duty);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].device_id, 1);
  EXPECT_EQ(rows[0].duty_cycle_pct, 1.5);
  EXPECT_EQ(rows[1].device_id, 2);
  EXPECT_EQ(rows[2].device_id, 3);
  EXPECT_FALSE(rows[0].hbm_used_bytes.has_value());
}

TEST(MetricsJoinTest, OneMetricFailingLeavesTheOthersWithANote) {
  std::vector<GrpcReply> replies(3);
  replies[0].response = vector_bytes("usage_v4");
  replies[1].response = vector_bytes("total_v4");
  replies[2].status = {GrpcCode::not_found, "no such metric"};
  TpuMetricsOutcome outcome = metrics_outcome_from(replies);
  ASSERT_TRUE(std::holds_alternative<TpuFigures>(outcome));
  const TpuFigures& figures = std::get<TpuFigures>(outcome);
  ASSERT_EQ(figures.chips.size(), 4u);
  EXPECT_FALSE(figures.chips[0].duty_cycle_pct.has_value());
  ASSERT_EQ(figures.notes.size(), 1u);
  EXPECT_EQ(figures.notes[0], "duty cycle: NOT_FOUND: no such metric");
}

TEST(MetricsJoinTest, MalformedRepliesAreErrors) {
  std::vector<GrpcReply> replies(3);
  for (GrpcReply& r : replies) r.response = std::string("\x0a\x10", 2);
  TpuMetricsOutcome outcome = metrics_outcome_from(replies);
  ASSERT_TRUE(std::holds_alternative<MetricsFailure>(outcome));
  EXPECT_NE(std::get<MetricsFailure>(outcome).message.find("malformed"), std::string::npos);
}

}  // namespace
}  // namespace tpurun

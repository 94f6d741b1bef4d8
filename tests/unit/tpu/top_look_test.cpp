// top's look at a pod: the scan and the metrics on each worker's connection,
// one value per worker, and the pod's summary and exit code.
#include "tpurun/tpu/top_look.hpp"

#include <gtest/gtest.h>

#include "fake_transport.hpp"
#include "fakes/grpc_test_server.hpp"
#include "scan_fixtures.hpp"
#include "tpu/protobuf_wire.hpp"

namespace tpurun {
namespace {

using testing::FakeTransport;
using testing::GrpcTestServer;
using testing::grpc_frame;
using testing::kBobHoldsEverything;
using testing::ReceivedRequest;
using testing::ServerReply;

// A MetricResponse with one gauge per chip (built with the wire writer; the
// decoder's own vectors come from protobuf, metrics_proto_test.cpp).
std::string response(const std::string& name, const std::vector<double>& values, bool as_int) {
  std::string metrics;
  for (size_t i = 0; i < values.size(); ++i) {
    std::string attr_value, attr, gauge, metric;
    wire::put_varint(attr_value, 3 << 3);  // int_attr
    wire::put_varint(attr_value, i);
    wire::put_string(attr, 1, "device-id");
    wire::put_string(attr, 2, attr_value);
    if (as_int) {
      wire::put_varint(gauge, 2 << 3);
      wire::put_varint(gauge, static_cast<uint64_t>(values[i]));
    } else {
      gauge.push_back(static_cast<char>((1 << 3) | 1));
      uint64_t bits;
      std::memcpy(&bits, &values[i], 8);
      for (int b = 0; b < 8; ++b) gauge.push_back(static_cast<char>(bits >> (8 * b)));
    }
    wire::put_string(metric, 1, attr);
    wire::put_string(metric, 3, gauge);
    wire::put_string(metrics, 3, metric);
  }
  std::string tpu_metric;
  wire::put_string(tpu_metric, 1, name);
  tpu_metric += metrics;
  std::string out;
  wire::put_string(out, 1, tpu_metric);
  return out;
}

// libtpu on a worker whose chips run at `duty` percent with 8 of 32 GiB used.
GrpcTestServer::Handler libtpu(double duty) {
  return [duty](const ReceivedRequest& r) {
    ServerReply reply;
    auto decoded = r.message;
    if (decoded.find(kHbmUsageMetric) != std::string::npos) reply.body = grpc_frame(response(kHbmUsageMetric, {8.0 * (1 << 30), 8.0 * (1 << 30)}, true));
    if (decoded.find(kHbmTotalMetric) != std::string::npos) reply.body = grpc_frame(response(kHbmTotalMetric, {32.0 * (1 << 30), 32.0 * (1 << 30)}, true));
    if (decoded.find(kDutyCycleMetric) != std::string::npos) reply.body = grpc_frame(response(kDutyCycleMetric, {duty, duty + 10}, false));
    return reply;
  };
}

TEST(TopLookTest, ScanAndMetricsPerWorkerOnOneConnection) {
  // Given: w0 busy at 50/60%, w1 idle (refused), w2 unreachable, w3 at 20/30%.
  GrpcTestServer w0(libtpu(50)), w3(libtpu(20));
  FakeTransport transport;
  transport.behaviour[0].out = kBobHoldsEverything;
  transport.behaviour[0].stream = [&](const std::string&, int) -> Result<std::unique_ptr<ByteStream>, TransportError> {
    return w0.client_stream();
  };
  transport.behaviour[1].out = kBobHoldsEverything;
  transport.behaviour[2].connect_error = TransportError{ErrorKind::timeout, "connect timed out after 5s"};
  transport.behaviour[3].out = kBobHoldsEverything;
  transport.behaviour[3].stream = [&](const std::string&, int) -> Result<std::unique_ptr<ByteStream>, TransportError> {
    return w3.client_stream();
  };

  // When
  std::vector<size_t> answered;
  auto looks = look_at_workers(testing::make_workers(4), transport, TopRequest{{"/dev/accel*"}, {}, 4},
                               CancelToken(), [&](size_t i, const WorkerLook&) { answered.push_back(i); });

  // Then: one look per worker, in order; one connection each.
  ASSERT_EQ(looks.size(), 4u);
  EXPECT_EQ(answered.size(), 4u);
  EXPECT_EQ(transport.connects(), 4);
  EXPECT_EQ(looks[0].scan.state, TpuState::busy_other);
  ASSERT_TRUE(looks[0].metrics && std::holds_alternative<TpuFigures>(*looks[0].metrics));
  EXPECT_EQ(std::get<TpuFigures>(*looks[0].metrics).chips.size(), 2u);
  ASSERT_TRUE(looks[1].metrics);
  EXPECT_TRUE(std::holds_alternative<NoTpuWorkload>(*looks[1].metrics));
  EXPECT_EQ(looks[2].scan.state, TpuState::unreachable);
  EXPECT_FALSE(looks[2].metrics.has_value());
  EXPECT_EQ(looks[2].scan.error, "connect timed out after 5s");
  // The scan ran first, then the stream was opened, on workers that answered.
  EXPECT_EQ(transport.commands_ran().size(), 3u);
  EXPECT_EQ(transport.streams_opened().size(), 3u);

  const TopSummary s = summarize_top(looks);
  EXPECT_EQ(s.workers, 4);
  EXPECT_EQ(s.with_figures, 2);
  EXPECT_EQ(s.no_workload, 1);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.chips, 4);
  EXPECT_DOUBLE_EQ(*s.duty_mean, (50 + 60 + 20 + 30) / 4.0);
  EXPECT_DOUBLE_EQ(*s.duty_min, 20);
  EXPECT_EQ(s.least_busy->index, 3);
  EXPECT_EQ(s.hbm_used_bytes, 4 * (8LL << 30));
  EXPECT_EQ(s.hbm_total_bytes, 4 * (32LL << 30));
  EXPECT_EQ(top_exit_code(looks, false), 255);
  EXPECT_EQ(top_exit_code(looks, true), 130);
}

TEST(TopLookTest, ExitCodes) {
  WorkerLook ok{{Worker{0, "h", 22}, TpuState::free, LockScan{}, ""}, TpuMetricsOutcome{NoTpuWorkload{}}};
  WorkerLook bad_service{{Worker{1, "h", 22}, TpuState::busy_other, LockScan{}, ""},
                         TpuMetricsOutcome{MetricsFailure{"UNAVAILABLE", std::nullopt, GrpcCode::unavailable}}};
  EXPECT_EQ(top_exit_code({ok}, false), 0);
  EXPECT_EQ(top_exit_code({ok, bad_service}, false), 1);
  const TopSummary s = summarize_top({ok, bad_service});
  EXPECT_EQ(s.failed, 1);
  EXPECT_FALSE(s.duty_mean.has_value());
  EXPECT_FALSE(s.least_busy.has_value());
}

// UNAVAILABLE from the metrics port: "no workload" where nothing holds the
// TPU, a failure where a holder runs (its runtime should be serving).
TEST(TopLookTest, UnavailableIsNoWorkloadOnlyWithoutAHolder) {
  const TpuMetricsOutcome unavailable{MetricsFailure{"UNAVAILABLE: no TPU workload", std::nullopt,
                                                     GrpcCode::unavailable}};
  WorkerScanResult free{Worker{0, "h", 22}, TpuState::free, LockScan{}, ""};
  EXPECT_TRUE(std::holds_alternative<NoTpuWorkload>(judge_metrics(free, unavailable)));

  WorkerScanResult held = free;
  held.state = TpuState::busy_other;
  held.scan->holders.push_back(ScannedProcess{4242, 1001, "bob"});
  EXPECT_TRUE(std::holds_alternative<MetricsFailure>(judge_metrics(held, unavailable)));

  WorkerScanResult locked = free;
  locked.scan->lockfile.exists = true;
  locked.scan->lockfile.held = true;
  EXPECT_TRUE(std::holds_alternative<MetricsFailure>(judge_metrics(locked, unavailable)));

  // Another status on a free worker stays what it is.
  const TpuMetricsOutcome internal{MetricsFailure{"INTERNAL", std::nullopt, GrpcCode::internal}};
  EXPECT_TRUE(std::holds_alternative<MetricsFailure>(judge_metrics(free, internal)));
  // No scan (it failed): nothing to judge by.
  WorkerScanResult unscanned{Worker{0, "h", 22}, TpuState::error, std::nullopt, "bad"};
  EXPECT_TRUE(std::holds_alternative<MetricsFailure>(judge_metrics(unscanned, unavailable)));
}

}  // namespace
}  // namespace tpurun

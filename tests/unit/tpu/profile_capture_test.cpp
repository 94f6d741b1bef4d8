// capture_profiles on fakes: every worker's port checked first, then every
// call with one session and one start time; one outcome per worker, and the
// exit code of them all.
#include <gtest/gtest.h>

#include <mutex>

#include "fake_transport.hpp"
#include "fakes/grpc_test_server.hpp"
#include "tpurun/tpu/profile.hpp"
#include "tpu/protobuf_wire.hpp"

namespace tpurun {
namespace {

using testing::FakeTransport;
using testing::GrpcTestServer;
using testing::grpc_frame;
using testing::ReceivedRequest;
using testing::ServerReply;

// The fields of a received ProfileRequest that line hosts up.
struct Seen {
  std::string session, root, host;
  uint64_t start_ns = 0, duration_ms = 0;
};
Seen seen(const std::string& message) {
  Seen s;
  wire::Reader r(message);
  wire::Field f;
  while (r.next(f)) {
    if (f.number == 5) s.root = std::string(f.data);
    if (f.number == 6) s.session = std::string(f.data);
    if (f.number == 7) s.host = std::string(f.data);
    if (f.number == 4) {
      wire::Reader o(f.data);
      wire::Field g;
      while (o.next(g)) {
        if (g.number == 8) s.start_ns = g.value;
        if (g.number == 9) s.duration_ms = g.value;
      }
    }
  }
  return s;
}

class ProfileCaptureTest : public ::testing::Test {
 protected:
  // Worker i answers the port check with `listener`, and serves with `reply`.
  void serve(int i, const std::string& listener, ServerReply reply = {}) {
    transport_.behaviour[i].out = listener;
    auto server = std::make_shared<GrpcTestServer>([reply](const ReceivedRequest&) { return reply; });
    servers_.push_back(server);
    transport_.behaviour[i].stream = [server](const std::string&, int) -> Result<std::unique_ptr<ByteStream>, TransportError> {
      return server->client_stream();
    };
  }
  std::vector<WorkerProfile> capture(int n) {
    plan_.settings.repository_root = "/logs/alice/p/RUN/plugins/profile";
    plan_.settings.session_id = "2026_11_26_10_00_00";
    plan_.settings.duration_ms = 500;
    plan_.run_id = "RUN";
    plan_.now_ns = [] { return uint64_t{1000000000000}; };
    plan_.fetch = [](const Worker&, Connection&, const std::string&) { return TraceCopy{1234, ""}; };
    return capture_profiles(testing::make_workers(n), transport_, plan_, CancelToken());
  }

  FakeTransport transport_;
  std::vector<std::shared_ptr<GrpcTestServer>> servers_;
  ProfileRequestPlan plan_;
};

TEST_F(ProfileCaptureTest, EveryWorkerGetsOneSessionAndOneStartTime) {
  // given: four workers, each with the run's server on the port
  for (int i = 0; i < 4; ++i) serve(i, "listener 1000 alice mine 42 RUN\n", {200, "application/grpc", grpc_frame("")});
  // when
  auto profiles = capture(4);
  // then: one call each, all with one session, one start time a lead ahead
  ASSERT_EQ(profiles.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(std::holds_alternative<TraceWritten>(profiles[i].outcome)) << i;
    const auto& t = std::get<TraceWritten>(profiles[i].outcome);
    EXPECT_EQ(t.path, "/logs/alice/p/RUN/plugins/profile/2026_11_26_10_00_00/w" + std::to_string(i) + ".xplane.pb");
    EXPECT_EQ(t.bytes, 1234u);
    auto requests = servers_[i]->requests();
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_EQ(requests[0].header(":path"), kProfileMethod);
    Seen s = seen(requests[0].message);
    EXPECT_EQ(s.session, "2026_11_26_10_00_00");
    EXPECT_EQ(s.root, "/logs/alice/p/RUN/plugins/profile");
    EXPECT_EQ(s.host, "w" + std::to_string(i));
    EXPECT_EQ(s.start_ns, 1000000000000u + 300u * 1000000u);
    EXPECT_EQ(s.duration_ms, 500u);
  }
  EXPECT_EQ(plan_.settings.start_timestamp_ns, 1000000000000u + 300u * 1000000u);
  EXPECT_EQ(profile_exit_code(profiles, false), 0);
  for (const auto& opened : transport_.streams_opened()) EXPECT_EQ(opened.host, "localhost");
}

TEST_F(ProfileCaptureTest, NoListenerOtherUsersAndOtherRunsAreNeverCalled) {
  serve(0, "listener 1000 alice mine 42 RUN\n", {200, "application/grpc", grpc_frame("")});
  transport_.behaviour[1].out = "none\n";
  transport_.behaviour[2].out = "listener 1001 bob other\n";
  transport_.behaviour[3].out = "listener 1000 alice mine 77 OTHER_RUN\n";
  auto profiles = capture(4);
  EXPECT_TRUE(std::holds_alternative<TraceWritten>(profiles[0].outcome));
  ASSERT_TRUE(std::holds_alternative<NoProfilerServer>(profiles[1].outcome));
  ASSERT_TRUE(std::holds_alternative<NotThisRunsServer>(profiles[2].outcome));
  EXPECT_EQ(std::get<NotThisRunsServer>(profiles[2].outcome).owner, "bob's process");
  ASSERT_TRUE(std::holds_alternative<NotThisRunsServer>(profiles[3].outcome));
  EXPECT_EQ(std::get<NotThisRunsServer>(profiles[3].outcome).owner, "your process 77 of run OTHER_RUN");
  // only worker 0's port was ever opened
  ASSERT_EQ(transport_.streams_opened().size(), 1u);
  EXPECT_EQ(transport_.streams_opened()[0].worker, 0);
  EXPECT_EQ(profile_exit_code(profiles, false), 1);
}

TEST_F(ProfileCaptureTest, ServerErrorIsTheCallFailing) {
  ServerReply busy;
  busy.trailers = {{"grpc-status", "13"}, {"grpc-message", "Another profiling session active."}};
  busy.trailers_only = true;
  serve(0, "listener 1000 alice mine 42 RUN\n", busy);
  auto profiles = capture(1);
  ASSERT_TRUE(std::holds_alternative<ProfileFailed>(profiles[0].outcome));
  EXPECT_EQ(std::get<ProfileFailed>(profiles[0].outcome).grpc, GrpcCode::internal);
  EXPECT_NE(std::get<ProfileFailed>(profiles[0].outcome).message.find("Another profiling session active."),
            std::string::npos);
  EXPECT_EQ(profile_exit_code(profiles, false), 1);
}

TEST_F(ProfileCaptureTest, UnreachableWorkerIs255) {
  serve(0, "listener 1000 alice mine 42 RUN\n", {200, "application/grpc", grpc_frame("")});
  transport_.behaviour[1].connect_error = TransportError{ErrorKind::connect, "connect timed out"};
  auto profiles = capture(2);
  EXPECT_TRUE(std::holds_alternative<TraceWritten>(profiles[0].outcome));
  EXPECT_TRUE(std::holds_alternative<ProfileFailed>(profiles[1].outcome));
  EXPECT_EQ(profile_exit_code(profiles, false), 255);
  EXPECT_EQ(profile_exit_code(profiles, true), 130);
}

TEST(ProfileExitCodeTest, TimedOutIs124UnlessWorse) {
  std::vector<WorkerProfile> p(2);
  p[0].outcome = TraceWritten{};
  p[1].outcome = ProfileTimedOut{1000};
  EXPECT_EQ(profile_exit_code(p, false), 124);
  p[0].outcome = NoProfilerServer{};
  EXPECT_EQ(profile_exit_code(p, false), 124);
}

}  // namespace
}  // namespace tpurun

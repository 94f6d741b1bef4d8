// gRPC unary calls over a ByteStream, against an nghttp2 server that answers
// as each test scripts it (fakes/grpc_test_server.hpp).
#include <gtest/gtest.h>

#include "fakes/grpc_test_server.hpp"
#include "tpurun/transport/grpc_call.hpp"

namespace tpurun {
namespace {

using testing::GrpcTestServer;
using testing::grpc_frame;
using testing::ReceivedRequest;
using testing::ServerReply;

std::vector<GrpcReply> call(GrpcTestServer& server, std::vector<GrpcCall> calls, int deadline_ms = 5000) {
  auto stream = server.client_stream();
  GrpcOptions options;
  options.authority = "localhost:8431";
  options.deadline_ms = deadline_ms;
  auto replies = grpc_unary_calls(*stream, calls, options, CancelToken());
  EXPECT_TRUE(replies.ok()) << (replies.ok() ? "" : replies.error().message);
  return replies.ok() ? *replies : std::vector<GrpcReply>{};
}

TEST(GrpcCallTest, ConcurrentCallsGetTheirOwnRepliesInOrder) {
  GrpcTestServer server([](const ReceivedRequest& r) {
    ServerReply reply;
    reply.body = grpc_frame("echo:" + r.message);
    return reply;
  });
  auto replies = call(server, {{"/s.S/A", "one"}, {"/s.S/B", "two"}, {"/s.S/A", ""}});
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_TRUE(replies[0].status.ok()) << replies[0].status.message;
  EXPECT_EQ(replies[0].response, "echo:one");
  EXPECT_EQ(replies[1].response, "echo:two");
  EXPECT_EQ(replies[2].response, "echo:");
  // What a gRPC server needs to see, on every stream.
  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  for (const ReceivedRequest& r : requests) {
    EXPECT_EQ(r.header(":method"), "POST");
    EXPECT_EQ(r.header(":scheme"), "http");
    EXPECT_EQ(r.header(":authority"), "localhost:8431");
    EXPECT_EQ(r.header("content-type"), "application/grpc");
    EXPECT_EQ(r.header("te"), "trailers");
    EXPECT_EQ(r.header("grpc-timeout"), "5000m");
  }
  EXPECT_EQ(requests[1].header(":path"), "/s.S/B");
}

TEST(GrpcCallTest, ErrorStatusInTrailersWithPercentEncodedMessage) {
  GrpcTestServer server([](const ReceivedRequest&) {
    ServerReply reply;
    reply.trailers = {{"grpc-status", "5"}, {"grpc-message", "metric x: not found %E2%9C%97 100%25"}};
    return reply;
  });
  auto replies = call(server, {{"/s.S/A", "x"}});
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].status.code, GrpcCode::not_found);
  EXPECT_EQ(replies[0].status.message, "metric x: not found \xE2\x9C\x97 100%");
}

TEST(GrpcCallTest, TrailersOnlyReply) {
  GrpcTestServer server([](const ReceivedRequest&) {
    ServerReply reply;
    reply.trailers_only = true;
    reply.trailers = {{"grpc-status", "12"}, {"grpc-message", "unknown method"}};
    return reply;
  });
  auto replies = call(server, {{"/s.S/Nope", ""}});
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].status.code, GrpcCode::unimplemented);
  EXPECT_EQ(replies[0].status.message, "unknown method");
  EXPECT_STREQ(grpc_code_name(replies[0].status.code), "UNIMPLEMENTED");
}

TEST(GrpcCallTest, HttpErrorWithoutGrpcStatusMapsAsGrpcSays) {
  GrpcTestServer server([](const ReceivedRequest&) {
    ServerReply reply;
    reply.http_status = 503;
    reply.content_type = "text/html";
    reply.trailers_only = true;
    reply.trailers = {};
    return reply;
  });
  auto replies = call(server, {{"/s.S/A", ""}});
  EXPECT_EQ(replies.at(0).status.code, GrpcCode::unavailable);
  EXPECT_NE(replies[0].status.message.find("HTTP status 503"), std::string::npos);
}

TEST(GrpcCallTest, ResetStreamAndMissingStatus) {
  GrpcTestServer server([](const ReceivedRequest& r) {
    ServerReply reply;
    if (r.message == "reset") reply.reset = NGHTTP2_REFUSED_STREAM;
    if (r.message == "cancel") reply.reset = NGHTTP2_CANCEL;
    if (r.message == "nostatus") reply.trailers = {};
    if (r.message == "nostatus") reply.body = grpc_frame("m");
    return reply;
  });
  auto replies = call(server, {{"/s.S/A", "reset"}, {"/s.S/A", "cancel"}, {"/s.S/A", "nostatus"}});
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_EQ(replies[0].status.code, GrpcCode::unavailable);
  EXPECT_EQ(replies[1].status.code, GrpcCode::cancelled);
  EXPECT_EQ(replies[2].status.code, GrpcCode::unknown);
}

TEST(GrpcCallTest, ConnectionClosedBeforeTheReplyIsUnavailable) {
  GrpcTestServer server([](const ReceivedRequest&) {
    ServerReply reply;
    reply.close_connection = true;
    return reply;
  });
  auto replies = call(server, {{"/s.S/A", ""}});
  EXPECT_EQ(replies.at(0).status.code, GrpcCode::unavailable);
}

TEST(GrpcCallTest, NoReplyByTheDeadline) {
  GrpcTestServer server([](const ReceivedRequest& r) {
    ServerReply reply;
    reply.silent = r.message == "hang";
    reply.body = grpc_frame("ok");
    return reply;
  });
  auto replies = call(server, {{"/s.S/A", "hang"}, {"/s.S/A", "fine"}}, 300);
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0].status.code, GrpcCode::deadline_exceeded);
  EXPECT_EQ(replies[1].response, "ok");  // the other call is not lost with it
}

TEST(GrpcCallTest, ALargeReplyArrivesWhole) {
  const std::string big(300000, 'x');  // past the 64 KiB initial window and many DATA frames
  GrpcTestServer server([&](const ReceivedRequest&) {
    ServerReply reply;
    reply.body = grpc_frame(big);
    return reply;
  });
  auto replies = call(server, {{"/s.S/A", ""}});
  EXPECT_TRUE(replies.at(0).status.ok()) << replies[0].status.message;
  EXPECT_EQ(replies[0].response.size(), big.size());
  EXPECT_TRUE(replies[0].response == big);
}

// The client's reading of what arrived, case by case.
TEST(GrpcReplyFromTest, FramingErrors) {
  GrpcReceived ok{200, "application/grpc", true, "0", "", grpc_frame("abc"), 0};
  EXPECT_EQ(grpc_reply_from(ok).response, "abc");

  GrpcReceived proto = ok;
  proto.content_type = "application/grpc+proto";
  EXPECT_TRUE(grpc_reply_from(proto).status.ok());

  GrpcReceived compressed = ok;
  compressed.body = grpc_frame("abc", 1);
  EXPECT_EQ(grpc_reply_from(compressed).status.code, GrpcCode::internal);

  GrpcReceived cut = ok;
  cut.body = grpc_frame("abcdef").substr(0, 7);
  auto cut_reply = grpc_reply_from(cut);
  EXPECT_EQ(cut_reply.status.code, GrpcCode::internal);
  EXPECT_NE(cut_reply.status.message.find("cut short"), std::string::npos) << cut_reply.status.message;

  GrpcReceived two = ok;
  two.body = grpc_frame("a") + grpc_frame("b");
  EXPECT_EQ(grpc_reply_from(two).status.code, GrpcCode::internal);

  GrpcReceived none = ok;
  none.body.clear();
  EXPECT_EQ(grpc_reply_from(none).status.code, GrpcCode::internal);

  GrpcReceived html = ok;
  html.content_type = "text/html";
  EXPECT_EQ(grpc_reply_from(html).status.code, GrpcCode::unknown);

  GrpcReceived odd = ok;
  odd.grpc_status = "x1";
  EXPECT_EQ(grpc_reply_from(odd).status.code, GrpcCode::unknown);

  GrpcReceived empty_message = ok;
  empty_message.body = grpc_frame("");  // an empty message is a message (all fields default)
  EXPECT_TRUE(grpc_reply_from(empty_message).status.ok());
}

TEST(GrpcReplyFromTest, PercentDecoding) {
  EXPECT_EQ(grpc_percent_decode("a%20b"), "a b");
  EXPECT_EQ(grpc_percent_decode("100%"), "100%");
  EXPECT_EQ(grpc_percent_decode("%zz"), "%zz");
  EXPECT_EQ(grpc_percent_decode("%4"), "%4");
}

}  // namespace
}  // namespace tpurun

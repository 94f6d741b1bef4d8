// The local transport's streams: TCP from this machine, and "refused" told
// apart from other failures (a single-host pod's `top` relies on it).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/fd_stream.hpp"
#include "transport/local_transport.hpp"

namespace tpurun {
namespace {

// A listening socket on 127.0.0.1 and its port.
std::pair<UniqueFd, int> listener() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::listen(fd.get(), 4), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
  return {std::move(fd), ntohs(a.sin_port)};
}

TEST(FdStreamTest, BytesBothWaysAndTheEnd) {
  auto [listening, port] = listener();
  LocalTransport transport;
  auto connection = transport.connect(Worker{0, "localhost", 22}, CancelToken());
  ASSERT_TRUE(connection.ok());
  auto stream = (*connection)->open_stream("127.0.0.1", port, CancelToken());
  ASSERT_TRUE(stream.ok()) << stream.error().message;
  UniqueFd peer(::accept(listening.get(), nullptr, nullptr));
  ASSERT_TRUE(peer);

  EXPECT_FALSE((*stream)->write("ping").has_value());
  char buf[8] = {};
  ASSERT_EQ(::read(peer.get(), buf, sizeof buf), 4);
  EXPECT_EQ(std::string(buf, 4), "ping");

  auto nothing = (*stream)->read(10);
  ASSERT_TRUE(nothing.ok());
  EXPECT_TRUE(nothing->data.empty());
  EXPECT_FALSE(nothing->eof);

  ASSERT_EQ(::write(peer.get(), "pong", 4), 4);
  auto got = (*stream)->read(1000);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->data, "pong");

  peer.reset();
  auto end = (*stream)->read(1000);
  ASSERT_TRUE(end.ok());
  EXPECT_TRUE(end->eof);
}

TEST(FdStreamTest, NothingListeningIsRefused) {
  int port = 0;
  {
    auto [listening, p] = listener();
    port = p;
  }  // closed: the port is free again, and nothing listens on it
  auto stream = connect_tcp_stream("127.0.0.1", port, CancelToken());
  ASSERT_FALSE(stream.ok());
  EXPECT_EQ(stream.error().kind, ErrorKind::refused);
  EXPECT_NE(stream.error().message.find("refused"), std::string::npos) << stream.error().message;
}

TEST(FdStreamTest, AnUnknownHostIsNotRefused) {
  auto stream = connect_tcp_stream("no-such-host.invalid", 8431, CancelToken());
  ASSERT_FALSE(stream.ok());
  EXPECT_EQ(stream.error().kind, ErrorKind::connect);
}

}  // namespace
}  // namespace tpurun

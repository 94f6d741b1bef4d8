#include "transport/keeper/frames.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "tpurun/util/unique_fd.hpp"

namespace tpurun::keeper {
namespace {

struct Pair {
  UniqueFd a, b;
  Pair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    a.reset(fds[0]);
    b.reset(fds[1]);
  }
};

TEST(KeeperFramesTest, AFrameCarriesItsHeadAndBytesUnchanged) {
  Pair p;
  FrameWriter w(p.a.get());
  FrameReader r(p.b.get());
  std::string bytes("out\0put\n\xff", 9);
  ASSERT_TRUE(w.send(FrameType::out, {{"id", 7}, {"text", "ü"}}, bytes));
  ASSERT_TRUE(w.send(FrameType::ping));
  Frame f;
  ASSERT_EQ(r.next(f, 1000), ReadStatus::ok);
  EXPECT_EQ(f.type, FrameType::out);
  EXPECT_EQ(f.head["id"], 7);
  EXPECT_EQ(f.head["text"], "ü");
  EXPECT_EQ(f.data, bytes);
  ASSERT_EQ(r.next(f, 1000), ReadStatus::ok);
  EXPECT_EQ(f.type, FrameType::ping);
  EXPECT_TRUE(f.data.empty());
}

TEST(KeeperFramesTest, AFrameSentInPiecesIsReadWhole) {
  Pair p;
  std::string whole;
  {
    Pair q;
    FrameWriter w(q.a.get());
    ASSERT_TRUE(w.send(FrameType::s_data, {{"eof", false}}, std::string(100000, 'x')));
    q.a.reset();
    char chunk[65536];
    ssize_t n;
    while ((n = ::read(q.b.get(), chunk, sizeof chunk)) > 0) whole.append(chunk, static_cast<size_t>(n));
  }
  std::thread writer([&] {
    for (size_t i = 0; i < whole.size(); i += 777) {
      const std::string piece = whole.substr(i, 777);
      ASSERT_EQ(::write(p.a.get(), piece.data(), piece.size()), static_cast<ssize_t>(piece.size()));
    }
  });
  FrameReader r(p.b.get());
  Frame f;
  ASSERT_EQ(r.next(f, 5000), ReadStatus::ok);
  writer.join();
  EXPECT_EQ(f.type, FrameType::s_data);
  EXPECT_EQ(f.data.size(), 100000u);
}

TEST(KeeperFramesTest, NothingWithinTheWaitIsATimeoutAndAClosedPeerIsEof) {
  Pair p;
  FrameReader r(p.b.get());
  Frame f;
  EXPECT_EQ(r.next(f, 10), ReadStatus::timeout);
  p.a.reset();
  EXPECT_EQ(r.next(f, 1000), ReadStatus::eof);
}

TEST(KeeperFramesTest, AFrameThatLiesAboutItsSizeIsAnError) {
  Pair p;
  const unsigned char huge[] = {1, 0xff, 0xff, 0xff, 0xff};
  ASSERT_EQ(::write(p.a.get(), huge, sizeof huge), 5);
  FrameReader r(p.b.get());
  Frame f;
  EXPECT_EQ(r.next(f, 1000), ReadStatus::error);
}

TEST(KeeperFramesTest, AHeadThatIsNotJsonIsAnError) {
  Pair p;
  const unsigned char bad[] = {1, 0, 0, 0, 7, 0, 0, 0, 3, '{', '{', '{'};
  ASSERT_EQ(::write(p.a.get(), bad, sizeof bad), static_cast<ssize_t>(sizeof bad));
  FrameReader r(p.b.get());
  Frame f;
  EXPECT_EQ(r.next(f, 1000), ReadStatus::error);
}

TEST(KeeperFramesTest, WritingToAGonePeerFailsWithoutSigpipe) {
  Pair p;
  p.b.reset();
  FrameWriter w(p.a.get());
  EXPECT_FALSE(w.send(FrameType::ping));
}

}  // namespace
}  // namespace tpurun::keeper

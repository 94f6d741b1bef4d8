#include "tpurun/kept_connections.hpp"

#include <gtest/gtest.h>

#include <deque>

namespace tpurun {
namespace {

// Each connection it makes answers runs from a shared script: "ok", "lost"
// (a broken session, nothing printed) or "lost-after-output".
class ScriptedTransport : public Transport {
 public:
  std::deque<std::string> script;
  int connects = 0;
  int runs = 0;

  Result<std::unique_ptr<Connection>, TransportError> connect(const Worker&, const CancelToken&) override {
    ++connects;
    return std::unique_ptr<Connection>(new Conn(*this));
  }

 private:
  struct Conn : Connection {
    explicit Conn(ScriptedTransport& t) : t(t) {}
    Result<CommandExit, TransportError> run(const RemoteCommand&, OutputSink& sink, const CancelToken&) override {
      ++t.runs;
      std::string next = t.script.empty() ? "ok" : t.script.front();
      if (!t.script.empty()) t.script.pop_front();
      if (next == "lost-after-output") sink.write(Stream::out, "partial");
      if (next != "ok") return unexpected(TransportError{ErrorKind::channel, "connection lost"});
      sink.write(Stream::out, "scan");
      return CommandExit{0, std::nullopt};
    }
    ScriptedTransport& t;
  };
};

Result<CommandExit, TransportError> use(KeptConnections& kept, std::string* out = nullptr) {
  CancelToken cancel;
  auto c = kept.connect({0, "10.0.0.1", 22}, cancel);
  EXPECT_TRUE(c.ok());
  CaptureSink sink;
  auto r = (*c)->run({"scan", "", 0}, sink, cancel);
  if (out) *out = sink.out;
  return r;
}

TEST(KeptConnectionsTest, LaterUsesShareTheFirstConnection) {
  auto inner = std::make_unique<ScriptedTransport>();
  ScriptedTransport& t = *inner;
  KeptConnections kept(std::move(inner));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(use(kept).ok());
  EXPECT_EQ(t.connects, 1);
  EXPECT_EQ(t.runs, 3);
}

TEST(KeptConnectionsTest, AStaleSessionIsReplacedAndTheCommandRunAgain) {
  auto inner = std::make_unique<ScriptedTransport>();
  ScriptedTransport& t = *inner;
  KeptConnections kept(std::move(inner));
  ASSERT_TRUE(use(kept).ok());
  t.script = {"lost"};
  std::string out;
  EXPECT_TRUE(use(kept, &out).ok());
  EXPECT_EQ(out, "scan");
  EXPECT_EQ(t.connects, 2);
  EXPECT_TRUE(use(kept).ok());
  EXPECT_EQ(t.connects, 2);
}

TEST(KeptConnectionsTest, AFreshConnectionsFailureIsTheAnswerAndTheNextUseReconnects) {
  auto inner = std::make_unique<ScriptedTransport>();
  ScriptedTransport& t = *inner;
  KeptConnections kept(std::move(inner));
  t.script = {"lost"};
  EXPECT_FALSE(use(kept).ok());
  EXPECT_EQ(t.connects, 1);
  EXPECT_TRUE(use(kept).ok());
  EXPECT_EQ(t.connects, 2);
}

TEST(KeptConnectionsTest, ACommandThatPrintedSomethingIsNotRunTwice) {
  auto inner = std::make_unique<ScriptedTransport>();
  ScriptedTransport& t = *inner;
  KeptConnections kept(std::move(inner));
  ASSERT_TRUE(use(kept).ok());
  t.script = {"lost-after-output"};
  EXPECT_FALSE(use(kept).ok());
  EXPECT_EQ(t.runs, 2);
  EXPECT_EQ(t.connects, 1);
}

}  // namespace
}  // namespace tpurun

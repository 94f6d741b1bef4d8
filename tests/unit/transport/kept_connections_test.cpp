#include "tpurun/transport/kept_connections.hpp"

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

class KeptConnectionsTest : public ::testing::Test {
 protected:
  KeptConnectionsTest() {
    auto inner = std::make_unique<ScriptedTransport>();
    t = inner.get();
    kept = std::make_unique<KeptConnections>(std::move(inner));
  }
  // One use: connect to worker 0, run the scan.
  Result<CommandExit, TransportError> use(std::string* out = nullptr) {
    CancelToken cancel;
    auto c = kept->connect({0, "10.0.0.1", 22, ""}, cancel);
    EXPECT_TRUE(c.ok());
    CaptureSink sink;
    auto r = (*c)->run({"scan", "", 0}, sink, cancel);
    if (out) *out = sink.out;
    return r;
  }
  ScriptedTransport* t = nullptr;
  std::unique_ptr<KeptConnections> kept;
};

TEST_F(KeptConnectionsTest, LaterUsesShareTheFirstConnection) {
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(use().ok());
  EXPECT_EQ(t->connects, 1);
  EXPECT_EQ(t->runs, 3);
}

TEST_F(KeptConnectionsTest, AStaleSessionIsReplacedAndTheCommandRunAgain) {
  ASSERT_TRUE(use().ok());
  t->script = {"lost"};
  std::string out;
  EXPECT_TRUE(use(&out).ok());
  EXPECT_EQ(out, "scan");
  EXPECT_EQ(t->connects, 2);
  EXPECT_TRUE(use().ok());
  EXPECT_EQ(t->connects, 2);
}

TEST_F(KeptConnectionsTest, AFreshConnectionsFailureIsTheAnswerAndTheNextUseReconnects) {
  t->script = {"lost"};
  EXPECT_FALSE(use().ok());
  EXPECT_EQ(t->connects, 1);
  EXPECT_TRUE(use().ok());
  EXPECT_EQ(t->connects, 2);
}

TEST_F(KeptConnectionsTest, ACommandThatPrintedSomethingIsNotRunTwice) {
  ASSERT_TRUE(use().ok());
  t->script = {"lost-after-output"};
  EXPECT_FALSE(use().ok());
  EXPECT_EQ(t->runs, 2);
  EXPECT_EQ(t->connects, 1);
}

}  // namespace
}  // namespace tpurun

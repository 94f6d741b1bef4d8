#include "tpurun/fanout/fanout.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "fake_transport.hpp"

namespace tpurun {
namespace {

using testing::FakeTransport;
using testing::make_workers;

TEST(RunParallelTest, CallsEveryIndexOnceAndRespectsWidth) {
  std::vector<std::atomic<int>> calls(100);
  std::atomic<int> in_flight{0}, peak{0};
  run_parallel(100, 4, [&](size_t i) {
    int now = ++in_flight;
    int p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
    std::this_thread::yield();
    ++calls[i];
    --in_flight;
  });
  for (auto& c : calls) EXPECT_EQ(c.load(), 1);
  EXPECT_LE(peak.load(), 4);
}

// Given a pod where one worker is unreachable and one fails mid-command,
// when a command fans out, then the others still run and each outcome says
// what happened on its own worker.
TEST(RunOnWorkersTest, OneWorkerFailingNeverStopsTheOthers) {
  FakeTransport transport;
  transport.behaviour[1].connect_error = TransportError{ErrorKind::connect, "refused"};
  transport.behaviour[2].run_error = TransportError{ErrorKind::channel, "connection lost"};
  transport.behaviour[3].exit_code = 5;
  FanoutPlan plan{make_workers(6), {"exec 'true'", ""}, 2, false, {}};

  auto outcomes = run_on_workers(plan, transport, {}, CancelToken());

  ASSERT_EQ(outcomes.size(), 6u);
  EXPECT_EQ(transport.commands_ran().size(), 5u);  // all but the unreachable one
  EXPECT_EQ(outcomes[1].error()->kind, ErrorKind::connect);
  EXPECT_EQ(outcomes[2].error()->kind, ErrorKind::channel);
  EXPECT_EQ(outcomes[3].exit()->code, 5);
  for (int i : {0, 4, 5}) EXPECT_TRUE(outcomes[static_cast<size_t>(i)].ok());
  for (size_t i = 0; i < outcomes.size(); ++i) EXPECT_EQ(outcomes[i].worker.index, static_cast<int>(i));
  EXPECT_EQ(aggregate_exit_code(outcomes), 255);
}

TEST(RunOnWorkersTest, CapturesOutputOnlyWhenAsked) {
  FakeTransport transport;
  transport.behaviour[0].out = "hello\n";
  transport.behaviour[0].err = "warn\n";
  FanoutPlan plan{make_workers(1), {"x", ""}, 1, false, {}};
  EXPECT_EQ(run_on_workers(plan, transport, {}, CancelToken())[0].out, "");
  plan.capture = true;
  auto outcomes = run_on_workers(plan, transport, {}, CancelToken());
  EXPECT_EQ(outcomes[0].out, "hello\n");
  EXPECT_EQ(outcomes[0].err, "warn\n");
}

TEST(RunOnWorkersTest, LiveSinkReceivesItsWorkersOutput) {
  FakeTransport transport;
  transport.behaviour[0].out = "zero\n";
  transport.behaviour[1].out = "one\n";
  CaptureSink s0, s1;
  FanoutPlan plan{make_workers(2), {"x", ""}, 2, false, {}};
  run_on_workers(plan, transport, {&s0, &s1}, CancelToken());
  EXPECT_EQ(s0.out, "zero\n");
  EXPECT_EQ(s1.out, "one\n");
}

}  // namespace
}  // namespace tpurun

#include "tpurun/transport/outcome.hpp"

#include <gtest/gtest.h>

#include "tpurun/fanout/gather.hpp"

namespace tpurun {
namespace {

WorkerOutcome exited(int index, int code, std::string out = "") {
  WorkerOutcome o;
  o.worker = {index, "10.0.0." + std::to_string(index + 1), 22};
  o.result = CommandExit{code, std::nullopt};
  o.out = std::move(out);
  return o;
}

WorkerOutcome failed(int index, ErrorKind kind, std::string message) {
  WorkerOutcome o;
  o.worker = {index, "10.0.0." + std::to_string(index + 1), 22};
  o.result = TransportError{kind, std::move(message)};
  return o;
}

TEST(AggregateExitCodeTest, ZeroWhenAllSucceed) {
  EXPECT_EQ(aggregate_exit_code({exited(0, 0), exited(1, 0)}), 0);
}

TEST(AggregateExitCodeTest, LargestRemoteCodeWins) {
  EXPECT_EQ(aggregate_exit_code({exited(0, 3), exited(1, 0), exited(2, 7)}), 7);
}

TEST(AggregateExitCodeTest, UnreachableWorkerMeans255EvenWithOtherFailures) {
  EXPECT_EQ(aggregate_exit_code({exited(0, 3), failed(1, ErrorKind::timeout, "t")}), 255);
  EXPECT_EQ(aggregate_exit_code({failed(0, ErrorKind::auth, "a"), failed(1, ErrorKind::interrupted, "i")}), 255);
}

TEST(AggregateExitCodeTest, InterruptedMeans130) {
  EXPECT_EQ(aggregate_exit_code({exited(0, 0), failed(1, ErrorKind::interrupted, "i")}), 130);
}

TEST(AggregateExitCodeTest, EmptyPodIsSuccess) { EXPECT_EQ(aggregate_exit_code({}), 0); }

TEST(FailureSummaryTest, NamesWorkerHostAndWhatFailed) {
  WorkerOutcome sig = exited(3, 143);
  std::get<CommandExit>(sig.result).signal = "TERM";
  auto lines = failure_summary({exited(0, 0), failed(2, ErrorKind::timeout, "connect timed out after 10s"),
                                exited(1, 4), sig});
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "w2 10.0.0.3: connect timed out after 10s");
  EXPECT_EQ(lines[1], "w1 10.0.0.2: exited with code 4");
  EXPECT_EQ(lines[2], "w3 10.0.0.4: killed by signal TERM");
}

TEST(GatherTest, GroupsIdenticalOutputsLargestFirst) {
  auto groups = group_identical_outputs({exited(0, 0, "a\n"), exited(1, 0, "b\n"), exited(2, 0, "a\n"),
                                         exited(3, 0, "a\n"), failed(4, ErrorKind::connect, "x")});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].workers, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(groups[0].out, "a\n");
  EXPECT_EQ(groups[1].workers, (std::vector<int>{1}));
}

TEST(GatherTest, CompactWorkerSet) {
  EXPECT_EQ(compact_worker_set({4}), "w4");
  EXPECT_EQ(compact_worker_set({0, 1, 2, 3, 5}), "w[0-3,5]");
  EXPECT_EQ(compact_worker_set({7, 1, 2}), "w[1-2,7]");
}

TEST(SignalNumberTest, KnowsCommonSignals) {
  EXPECT_EQ(signal_number("TERM"), 15);
  EXPECT_EQ(signal_number("KILL"), 9);
  EXPECT_EQ(signal_number("NOPE"), 0);
}

}  // namespace
}  // namespace tpurun

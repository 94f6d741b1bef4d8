#include "tpurun/fanout/collapse.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

namespace tpurun {
namespace {

using std::chrono::milliseconds;
using Time = LineCollapser::TimePoint;

// A collapser over workers 0..n-1 whose emitted lines are recorded as
// "out w0-7: text" ("err ...", "+w7" for late lines).
struct Recorded {
  explicit Recorded(int n, CollapseOptions options = {})
      : collapser(indices(n), [this](const CollapsedLine& l) { record(l); }, options) {}
  static std::vector<int> indices(int n) {
    std::vector<int> v;
    for (int i = 0; i < n; ++i) v.push_back(i);
    return v;
  }
  void record(const CollapsedLine& l) {
    emitted.push_back(l);
    lines.push_back(std::string(l.stream == Stream::out ? "out " : "err ") + (l.late ? "+" : "") +
                    worker_range_label(l.workers) + ": " + l.text);
  }
  Time at(int ms) const { return t0 + milliseconds(ms); }
  void add(int worker, const std::string& text, int ms, Stream stream = Stream::out) {
    collapser.add(worker, stream, text, at(ms));
  }
  Time t0{};
  std::vector<std::string> lines;
  std::vector<CollapsedLine> emitted;
  LineCollapser collapser;
};

using Lines = std::vector<std::string>;

TEST(WorkerRangeLabelTest, CompressesRuns) {
  EXPECT_EQ(worker_range_label({0, 1, 2, 3, 5, 7, 8, 9}), "w0-3,5,7-9");
  EXPECT_EQ(worker_range_label({4}), "w4");
  EXPECT_EQ(worker_range_label({3, 1, 2}), "w1-3");
}

TEST(LineCollapserTest, IdenticalLinesFromAllWorkersAreEmittedOnceWithoutWaiting) {
  Recorded r(8);
  // Given every worker printing the same line,
  for (int w = 0; w < 7; ++w) r.add(w, "epoch 1 loss 0.500", 10 * w);
  EXPECT_TRUE(r.lines.empty()) << "held until the last worker prints it";
  r.add(7, "epoch 1 loss 0.500", 70);
  // then it is emitted once, as soon as the last one printed it.
  EXPECT_EQ(r.lines, Lines{"out w0-7: epoch 1 loss 0.500"});
}

TEST(LineCollapserTest, DistinctLinesStayPerWorkerAfterTheWindow) {
  Recorded r(3);
  // Given each worker printing its own host name,
  r.add(0, "host-0", 0);
  r.add(1, "host-1", 5);
  r.add(2, "host-2", 10);
  r.collapser.tick(r.at(499));
  EXPECT_TRUE(r.lines.empty());
  // when the window has passed, each is emitted on its own, in the order printed.
  r.collapser.tick(r.at(510));
  EXPECT_EQ(r.lines, (Lines{"out w0: host-0", "out w1: host-1", "out w2: host-2"}));
}

TEST(LineCollapserTest, SlowWorkerWithinTheWindowIsFoldedIn) {
  Recorded r(4);
  r.add(0, "same", 0);
  r.add(1, "same", 0);
  r.add(2, "same", 300);
  // The window counts from the last worker that joined: still held at 700.
  r.collapser.tick(r.at(700));
  EXPECT_TRUE(r.lines.empty());
  r.add(3, "same", 750);
  EXPECT_EQ(r.lines, Lines{"out w0-3: same"});
}

TEST(LineCollapserTest, LateWorkerIsNotedAfterTheLineWasShown) {
  Recorded r(4);
  for (int w = 0; w < 3; ++w) r.add(w, "compiled", 0);
  // Given worker 3 still compiling when the window closes,
  r.collapser.tick(r.at(600));
  EXPECT_EQ(r.lines, Lines{"out w0-2: compiled"});
  // when it prints the line later, it gets a late line of its own (after a
  // window of its own, in case more stragglers follow).
  r.add(3, "compiled", 5000);
  r.collapser.tick(r.at(5500));
  EXPECT_EQ(r.lines, (Lines{"out w0-2: compiled", "out +w3: compiled"}));
}

TEST(LineCollapserTest, HoldIsBoundedEvenWhileWorkersKeepJoining) {
  CollapseOptions options;
  options.window = milliseconds(500);
  options.max_hold = milliseconds(2000);
  Recorded r(10, options);
  for (int w = 0; w < 6; ++w) r.add(w, "tick", 400 * w);  // joins at 0, 400, ..., 2000
  r.collapser.tick(r.at(2000));
  EXPECT_EQ(r.lines, Lines{"out w0-5: tick"});
}

TEST(LineCollapserTest, OneWorkersLinesKeepTheirOrderBehindAHeldLine) {
  Recorded r(2);
  // Given worker 0 printing a line of its own, then a line worker 1 also prints,
  r.add(0, "only mine", 0);
  r.add(0, "shared", 10);
  r.add(1, "shared", 20);
  // the shared line, though complete, waits behind worker 0's earlier line.
  EXPECT_TRUE(r.lines.empty());
  r.collapser.tick(r.at(500));
  EXPECT_EQ(r.lines, (Lines{"out w0: only mine", "out w0-1: shared"}));
}

TEST(LineCollapserTest, DistinctLinesBetweenSharedOnesDoNotSplitThem) {
  Recorded r(3);
  // Given each worker printing a shared line, its own host name, then another shared line,
  for (int w = 0; w < 3; ++w) {
    r.add(w, "start", w);
    r.add(w, "host-" + std::to_string(w), w);
    r.add(w, "end", w);
  }
  r.collapser.tick(r.at(600));
  // then both shared lines are collapsed, with the host names between them.
  EXPECT_EQ(r.lines, (Lines{"out w0-2: start", "out w0: host-0", "out w1: host-1", "out w2: host-2",
                            "out w0-2: end"}));
}

TEST(LineCollapserTest, AJoinThatWouldReorderAWorkersLinesOpensANewGroup) {
  Recorded r(2);
  // Given worker 0 printing A, B, A and worker 1 printing B, A,
  r.add(0, "A", 0);
  r.add(0, "B", 1);
  r.add(0, "A", 2);
  r.add(1, "B", 3);
  r.add(1, "A", 4);
  r.collapser.flush_all();
  // then worker 1's A joins the A after its B, so both workers read in order.
  EXPECT_EQ(r.lines, (Lines{"out w0: A", "out w0-1: B", "out w0-1: A"}));
}

TEST(LineCollapserTest, LongBurstsFromEveryWorkerCollapseWhole) {
  // Given three workers whose logs are read in long bursts (a follower
  // catching up: 1000 lines of worker 0, then worker 1's, then worker 2's),
  // each printing the same steps and every 10th step a line of its own,
  Recorded r(3);
  for (int w = 0; w < 3; ++w) {
    for (int i = 0; i < 1000; ++i) {
      r.add(w, "step " + std::to_string(i), 0);
      if (i % 10 == 9) r.add(w, "w" + std::to_string(w) + " at " + std::to_string(i), 0);
    }
  }
  r.collapser.flush_all();
  // then every step is one line of all three, each in its place.
  Lines want;
  for (int i = 0; i < 1000; ++i) {
    want.push_back("out w0-2: step " + std::to_string(i));
    if (i % 10 == 9) {
      for (int w = 0; w < 3; ++w) want.push_back("out w" + std::to_string(w) + ": w" + std::to_string(w) + " at " + std::to_string(i));
    }
  }
  EXPECT_EQ(r.lines, want);
}

TEST(LineCollapserTest, AJoinAfterManyLinesOfItsOwnIsStillInOrder) {
  Recorded r(2);
  // Given worker 0 printing A then 500 lines of its own, and worker 1 500
  // lines of its own then A,
  r.add(0, "A", 0);
  for (int i = 0; i < 500; ++i) r.add(0, "zero " + std::to_string(i), 0);
  for (int i = 0; i < 500; ++i) r.add(1, "one " + std::to_string(i), 0);
  r.add(1, "A", 0);
  r.collapser.flush_all();
  // then A is one line of both, after worker 1's own lines.
  ASSERT_EQ(r.lines.size(), 1001u);
  EXPECT_EQ(std::count(r.lines.begin(), r.lines.end(), "out w0-1: A"), 1);
  EXPECT_EQ(std::find(r.lines.begin(), r.lines.end(), "out w0-1: A") - r.lines.begin(), 500);
}

TEST(LineCollapserTest, AJoinFarBehindThatWouldReorderOpensANewGroup) {
  Recorded r(2);
  // Given worker 0 printing A, 500 lines, B, and worker 1 printing B then A,
  r.add(0, "A", 0);
  for (int i = 0; i < 500; ++i) r.add(0, "zero " + std::to_string(i), 0);
  r.add(0, "B", 0);
  r.add(1, "B", 0);
  r.add(1, "A", 0);
  r.collapser.flush_all();
  // then B is shared and worker 1's A comes after it, on its own.
  ASSERT_EQ(r.lines.size(), 503u);
  EXPECT_EQ(r.lines.front(), "out w0: A");
  EXPECT_EQ(r.lines[501], "out w0-1: B");
  EXPECT_EQ(r.lines[502], "out w1: A");
}

TEST(LineCollapserTest, RepeatedLinesOfOneWorkerAreNotMerged) {
  Recorded r(2);
  r.add(0, "waiting", 0);
  r.add(0, "waiting", 1);
  r.collapser.worker_ended(1, r.at(2));
  EXPECT_EQ(r.lines, (Lines{"out w0: waiting", "out w0: waiting"}));
}

TEST(LineCollapserTest, StreamsAreCollapsedSeparately) {
  Recorded r(2);
  // Given the same text on stdout from one worker and on stderr from the other,
  r.add(0, "msg", 0, Stream::out);
  r.add(1, "msg", 0, Stream::err);
  r.add(0, "warn", 1, Stream::err);
  r.add(1, "warn", 1, Stream::err);
  r.collapser.flush_all();
  // then nothing crosses streams; stderr's shared line is collapsed on stderr.
  EXPECT_EQ(r.lines, (Lines{"out w0: msg", "err w1: msg", "err w0-1: warn"}));
}

TEST(LineCollapserTest, EndedWorkersAreNotWaitedFor) {
  Recorded r(3);
  r.add(0, "done", 0);
  r.add(1, "done", 0);
  EXPECT_TRUE(r.lines.empty());
  // When worker 2 ends (or could not be reached), the line is complete.
  r.collapser.worker_ended(2, r.at(1));
  EXPECT_EQ(r.lines, Lines{"out w0-1: done"});
}

TEST(LineCollapserTest, HeldBytesAreBounded) {
  CollapseOptions options;
  options.max_held_bytes = 4096;
  Recorded r(2, options);
  // Given one worker printing much more than the bound within the window,
  for (int i = 0; i < 100; ++i) r.add(0, "line " + std::to_string(i) + std::string(100, '.'), 0);
  // then the oldest lines were emitted early, in order.
  ASSERT_GT(r.lines.size(), 50u);
  EXPECT_EQ(r.lines[0], "out w0: line 0" + std::string(100, '.'));
}

TEST(LineCollapserTest, WorkersOutsideTheFollowedSetPassThrough) {
  Recorded r(2);
  r.add(9, "stray", 0);
  EXPECT_EQ(r.lines, Lines{"out w9: stray"});
}

TEST(LineCollapserTest, ConcurrentWorkersKeepEachWorkersOrder) {
  // Given 8 threads, one per worker, each printing 200 lines that all share,
  Recorded r(8);
  std::vector<std::thread> threads;
  for (int w = 0; w < 8; ++w) {
    threads.emplace_back([&r, w] {
      for (int i = 0; i < 200; ++i) r.add(w, "step " + std::to_string(i), i);
      r.collapser.worker_ended(w, r.at(200));
    });
  }
  for (auto& t : threads) t.join();
  r.collapser.flush_all();
  // then every worker's steps appear exactly once each, in order.
  for (int w = 0; w < 8; ++w) {
    int next = 0;
    for (const CollapsedLine& line : r.emitted) {
      if (std::find(line.workers.begin(), line.workers.end(), w) == line.workers.end()) continue;
      ASSERT_EQ(line.text, "step " + std::to_string(next)) << "worker " << w;
      ++next;
    }
    EXPECT_EQ(next, 200) << "worker " << w;
  }
}

}  // namespace
}  // namespace tpurun

#include "tpurun/fanout/live_output.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "fakes/slurp.hpp"

namespace tpurun {
namespace {

using testing::slurp;

// A LiveOutput over workers 0..n-1 (hosts h0, h1, ...), printing into temp
// files, with a clock the test moves.
struct Live {
  explicit Live(int n, bool collapse = true, bool terminal = false)
      : out(std::tmpfile()), err(std::tmpfile()), printer(out, err, false, terminal) {
    for (int i = 0; i < n; ++i) workers.push_back(Worker{i, "h" + std::to_string(i), 22});
    LiveOutputOptions options;
    options.collapse = collapse;
    options.clock = [this] { return std::chrono::steady_clock::time_point{} + std::chrono::milliseconds(ms.load()); };
    live = std::make_unique<LiveOutput>(printer, workers, options);
  }
  ~Live() {
    live.reset();
    std::fclose(out);
    std::fclose(err);
  }
  void write(int w, std::string_view data, Stream s = Stream::out) { live->sink(w).write(s, data); }
  std::FILE* out;
  std::FILE* err;
  LinePrinter printer;
  std::vector<Worker> workers;
  std::atomic<long long> ms{0};
  std::unique_ptr<LiveOutput> live;
};

TEST(LiveOutputTest, SharedLinesPrintOnceDistinctLinesKeepTheirPrefix) {
  Live l(3);
  // Given three workers printing one shared line and one line of their own,
  for (int w = 0; w < 3; ++w) l.write(w, "same\nmine " + std::to_string(w) + "\n");
  // when they end,
  for (int w = 0; w < 3; ++w) l.live->sink(w).flush();
  // then the shared line is printed once with the workers, the others as before.
  EXPECT_EQ(slurp(l.out), "[w0-2] same\n[w0 h0] mine 0\n[w1 h1] mine 1\n[w2 h2] mine 2\n");
}

TEST(LiveOutputTest, HeldLinesArePrintedWhenTheWindowPassesOnTick) {
  Live l(2);
  l.write(0, "only w0\n");
  l.live->tick();
  EXPECT_EQ(slurp(l.out), "");
  l.ms = 600;
  l.live->tick();
  EXPECT_EQ(slurp(l.out), "[w0 h0] only w0\n");
}

TEST(LiveOutputTest, LinesOfAPassShareItsTimeHoweverLongReadingTakes) {
  // Given a pass over logs already written, where w0 printed "x" and w1
  // printed "y" then "x", read so slowly that the window passes in between,
  Live l(3);
  l.live->begin_pass();
  l.write(0, "x\n");
  l.ms = 800;
  l.write(1, "y\nx\n");
  l.write(2, "x\n");
  l.live->end_pass();
  l.live->finish();
  // then how slowly they were read does not split "x" (it would, unpassed).
  EXPECT_EQ(slurp(l.out), "[w1 h1] y\n[w0-2] x\n");
}

TEST(LiveOutputTest, ATickAfterAPassCountsTimeOnlyUpToThePassesStart) {
  Live l(2);
  // Given a pass that read w0's "x" and took 800 ms,
  l.live->begin_pass();
  l.write(0, "x\n");
  l.ms = 800;
  l.live->end_pass();
  // then the tick after it does not let "x" go: w1's copy may have been
  // written while the pass read;
  l.live->tick();
  EXPECT_EQ(slurp(l.out), "");
  // the next pass finds it.
  l.live->begin_pass();
  l.write(1, "x\n");
  l.live->end_pass();
  EXPECT_EQ(slurp(l.out), "[w0-1] x\n");
  // With nothing read since, ticks count the clock's time again.
  l.write(0, "alone\n");
  l.live->tick();
  l.ms = 1400;
  l.live->tick();
  EXPECT_EQ(slurp(l.out), "[w0-1] x\n[w0 h0] alone\n");
}

TEST(LiveOutputTest, OutsideAPassTheClockRuns) {
  Live l(3);
  l.write(0, "x\n");
  l.ms = 800;
  l.write(1, "y\nx\n");
  l.write(2, "x\n");
  l.live->finish();
  EXPECT_EQ(slurp(l.out), "[w0 h0] x\n[w1 h1] y\n[w1-2] x\n");
}

TEST(LiveOutputTest, RawPrintsEveryLineAsItComes) {
  Live l(2, /*collapse=*/false);
  EXPECT_FALSE(l.live->collapsing());
  l.write(0, "same\n");
  l.write(1, "same\n");
  EXPECT_EQ(slurp(l.out), "[w0 h0] same\n[w1 h1] same\n");
}

TEST(LiveOutputTest, OneWorkerIsNeverCollapsed) {
  Live l(1);
  EXPECT_FALSE(l.live->collapsing());
  l.write(0, "x\n");
  EXPECT_EQ(slurp(l.out), "[w0 h0] x\n");
}

TEST(LiveOutputTest, StderrStaysOnStderr) {
  Live l(2);
  l.write(0, "warn\n", Stream::err);
  l.write(1, "warn\n", Stream::err);
  l.live->finish();
  EXPECT_EQ(slurp(l.out), "");
  EXPECT_EQ(slurp(l.err), "[w0-1] warn\n");
}

TEST(LiveOutputTest, ProgressRedrawsPrintOnlyTheirFinalState) {
  for (bool collapse : {true, false}) {
    Live l(2, collapse);
    l.write(0, "a\rb\r");
    // While a bar redraws, the bottom line shows its latest state;
    EXPECT_NE(l.live->bottom_line().find("w0: b"), std::string::npos) << l.live->bottom_line();
    l.write(0, "c\n");
    l.live->finish();
    // the final state is the only line printed, and the bottom line forgets it.
    EXPECT_EQ(slurp(l.out), "[w0 h0] c\n") << "collapse=" << collapse;
    EXPECT_EQ(l.live->bottom_line().find("w0:"), std::string::npos);
  }
}

TEST(LiveOutputTest, LongLineIsCutWithANote) {
  Live l(2);
  l.write(1, std::string(100 * 1024, 'z') + "\n");
  l.live->finish();
  const std::string text = slurp(l.out);
  EXPECT_EQ(text, "[w1 h1] " + std::string(64 * 1024, 'z') + " ... [line cut at 64 KiB]\n");
}

TEST(LiveOutputTest, BottomLineCountsStatesAndNamesTheQuietWorker) {
  Live l(4);
  l.live->set_state(3, WorkerRunState::failed);
  l.ms = 120'000;
  l.write(0, "tick\n");
  l.write(1, "tick\n");
  EXPECT_EQ(l.live->bottom_line(), "4 workers: 3 running, 1 failed · quiet: w2 2m (others ≤ 0s)");
}

TEST(LiveOutputTest, StatusLineIsDrawnOnlyOnATerminal) {
  Live plain(2, true, /*terminal=*/false);
  plain.live->tick();
  EXPECT_EQ(slurp(plain.err), "");
  Live tty(2, true, /*terminal=*/true);
  tty.live->tick();
  EXPECT_NE(slurp(tty.err).find("2 workers: 2 running"), std::string::npos);
}

TEST(LiveOutputTest, SinksFromManyThreadsWithATickerRunning) {
  // Given a ticker thread and one writer thread per worker,
  Live l(8);
  {
    LiveOutputTicker ticker(*l.live, std::chrono::milliseconds(1));
    std::vector<std::thread> threads;
    for (int w = 0; w < 8; ++w) {
      threads.emplace_back([&l, w] {
        for (int i = 0; i < 100; ++i) l.write(w, "line " + std::to_string(i) + "\n");
        l.live->set_state(w, WorkerRunState::exited);
        l.live->sink(w).flush();
      });
    }
    for (auto& t : threads) t.join();
  }  // the ticker stops and joins here
  l.live->finish();
  // then each shared line was printed once, for all workers, in order.
  std::string want;
  for (int i = 0; i < 100; ++i) want += "[w0-7] line " + std::to_string(i) + "\n";
  EXPECT_EQ(slurp(l.out), want);
}

TEST(LiveOutputTest, UnknownWorkerIsAnError) {
  Live l(2);
  EXPECT_THROW(l.live->sink(5), std::out_of_range);
}

}  // namespace
}  // namespace tpurun

// LogTail reads only the logs it is told changed, from where it left off.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>

#include "fakes/slurp.hpp"
#include "fakes/temp_dir.hpp"
#include "tpurun/runs/follow/log_tail.hpp"

namespace tpurun {
namespace {

using testing::slurp;

class LogTailTest : public ::testing::Test {
 protected:
  LogTailTest() : out_(std::tmpfile()), err_(std::tmpfile()), printer_(out_, err_, false, false) {
    workers_ = {Worker{0, "h0", 22}, Worker{1, "h1", 22}};
    LiveOutputOptions options;
    options.collapse = false;
    options.status_line = false;
    live_ = std::make_unique<LiveOutput>(printer_, workers_, options);
  }
  ~LogTailTest() override {
    live_.reset();
    std::fclose(out_);
    std::fclose(err_);
  }
  void append(int worker, const std::string& text) {
    std::ofstream(dir_.path() + "/worker" + std::to_string(worker) + ".log", std::ios::app) << text;
  }

  testing::TempDir dir_;
  std::FILE* out_;
  std::FILE* err_;
  LinePrinter printer_;
  std::vector<Worker> workers_;
  std::unique_ptr<LiveOutput> live_;
};

TEST_F(LogTailTest, NamesEachWorkersLogFile) {
  LogTail follower(dir_.path(), workers_, *live_);
  EXPECT_EQ(follower.file_names(), (std::vector<std::string>{"worker0.log", "worker1.log"}));
}

TEST_F(LogTailTest, DrainsOnlyTheGivenWorkersFromWhereItLeftOff) {
  LogTail follower(dir_.path(), workers_, *live_);
  append(0, "zero a\n");
  append(1, "one a\n");
  EXPECT_TRUE(follower.drain(std::vector<int>{1}));
  EXPECT_EQ(slurp(out_), "[w1 h1] one a\n");

  append(1, "one b\n");
  EXPECT_TRUE(follower.drain(std::vector<int>{1}));
  EXPECT_FALSE(follower.drain(std::vector<int>{1}));  // nothing new
  follower.drain();                                  // everything else
  EXPECT_EQ(slurp(out_), "[w1 h1] one a\n[w1 h1] one b\n[w0 h0] zero a\n");
}

TEST_F(LogTailTest, ALogNotCreatedYetIsNothingToRead) {
  LogTail follower(dir_.path(), workers_, *live_);
  EXPECT_FALSE(follower.drain(std::vector<int>{0, 1}));
  append(0, "late\n");
  EXPECT_TRUE(follower.drain(std::vector<int>{0, 1}));
  EXPECT_EQ(slurp(out_), "[w0 h0] late\n");
}

TEST_F(LogTailTest, ALogTruncatedWhileFollowedIsReadAgainFromItsStart) {
  // Given a log read up to its end
  LogTail follower(dir_.path(), workers_, *live_);
  append(0, "first line\nsecond line\n");
  EXPECT_TRUE(follower.drain(std::vector<int>{0}));
  // When it is truncated, and written again (shorter than before)
  std::ofstream(dir_.path() + "/worker0.log", std::ios::trunc) << "new\n";
  // Then, as tail -F, it is read again from its start, and nothing is skipped
  EXPECT_TRUE(follower.drain(std::vector<int>{0}));
  EXPECT_EQ(slurp(out_), "[w0 h0] first line\n[w0 h0] second line\n[w0 h0] new\n");
  EXPECT_NE(slurp(err_).find("worker0.log was truncated; reading it again from its start"), std::string::npos);
}

TEST_F(LogTailTest, ALogReplacedWhileFollowedIsOpenedAgain) {
  LogTail follower(dir_.path(), workers_, *live_);
  append(0, "old\n");
  EXPECT_TRUE(follower.drain(std::vector<int>{0}));
  const std::string log = dir_.path() + "/worker0.log";
  std::ofstream(log + ".new") << "old\nreplaced\n";
  std::rename((log + ".new").c_str(), log.c_str());
  EXPECT_TRUE(follower.drain(std::vector<int>{0}));
  EXPECT_NE(slurp(out_).find("[w0 h0] replaced\n"), std::string::npos);
}

TEST_F(LogTailTest, APassStopsAfterItsBudgetAndSaysWhatIsLeft) {
  LogTail follower(dir_.path(), workers_, *live_, 256 * 1024);
  // Given a log that grew by more than one pass reads,
  const std::string line(99, 'x');
  std::string text;
  while (text.size() <= 256 * 1024 + 100'000) text += line + "\n";
  append(1, text);
  append(0, "zero\n");
  // then a pass reads part of it, and says that worker 1 is behind;
  EXPECT_TRUE(follower.drain(std::vector<int>{0, 1}));
  EXPECT_EQ(follower.behind(), std::vector<int>{1});
  const std::string first = slurp(out_);
  EXPECT_LT(std::count(first.begin(), first.end(), '\n'), std::count(text.begin(), text.end(), '\n'));
  // the next pass reads the rest.
  EXPECT_TRUE(follower.drain(follower.behind()));
  EXPECT_TRUE(follower.behind().empty());
  const std::string printed = slurp(out_);
  EXPECT_EQ(std::count(printed.begin(), printed.end(), '\n'), std::count(text.begin(), text.end(), '\n') + 1);
}

TEST_F(LogTailTest, AnEndedWorkersLogIsReadToItsEndAndItsLastLinePrinted) {
  LogTail follower(dir_.path(), workers_, *live_);
  append(0, "zero\n");
  append(1, "one\nlast line without a newline");
  follower.ended(1, true);
  // Worker 1's log is read and flushed; worker 0's is left for its own pass.
  EXPECT_EQ(slurp(out_), "[w1 h1] one\n[w1 h1] last line without a newline\n");
  follower.finish();
  EXPECT_EQ(slurp(out_), "[w1 h1] one\n[w1 h1] last line without a newline\n[w0 h0] zero\n");
}

TEST_F(LogTailTest, APassReadsNoLogFarAheadOfTheOthers) {
  LogTail follower(dir_.path(), workers_, *live_);
  // Given worker 1's log 1 MiB ahead of worker 0's,
  std::string line = std::string(63, 'y') + "\n";
  std::string mib;
  for (int i = 0; i < 16 * 1024; ++i) mib += line;
  append(0, "zero\n");
  append(1, mib);
  // then one pass reads at most 256 KiB of it, and says there is more.
  EXPECT_TRUE(follower.drain(std::vector<int>{0, 1}));
  EXPECT_EQ(follower.behind(), std::vector<int>{1});
  const std::string printed = slurp(out_);
  EXPECT_EQ(std::count(printed.begin(), printed.end(), '\n'), 1 + 4 * 1024);
}

TEST_F(LogTailTest, WhileBehindTheLogsHeldLinesWaitForWhatIsUnread) {
  // Given a clock that moves a second each time it is read, a collapsing
  // follower, and worker 0's log longer than one pass,
  long long seconds = 0;
  LiveOutputOptions options;
  options.status_line = false;
  options.clock = [&] { return std::chrono::steady_clock::time_point{} + std::chrono::seconds(++seconds); };
  LiveOutput live(printer_, workers_, options);
  LogTail follower(dir_.path(), workers_, live, 64 * 1024);
  std::string text;  // 200 KiB: well under the 4 MiB of held text
  for (int i = 0; text.size() <= 200 * 1024; ++i) text += "line " + std::to_string(i) + "\n";
  append(0, text);
  EXPECT_TRUE(follower.drain(std::vector<int>{0, 1}));
  ASSERT_EQ(follower.behind(), std::vector<int>{0});
  // when worker 1's copy shows up, and is read by the next passes, seconds later,
  append(1, text);
  follower.drain(std::vector<int>{0, 1});
  while (!follower.behind().empty()) follower.drain(follower.behind());
  follower.finish();
  // then every line is one line of both workers.
  const std::string printed = slurp(out_);
  EXPECT_EQ(printed.find("[w0 h0]"), std::string::npos);
  EXPECT_EQ(printed.find("[+w1]"), std::string::npos);
  EXPECT_EQ(std::count(printed.begin(), printed.end(), '\n'), std::count(text.begin(), text.end(), '\n'));
}

TEST_F(LogTailTest, HowSlowlyTheLogsAreReadSplitsNoCollapsedLine) {
  // Given a clock that moves a second each time it is read (a reader far
  // slower than the 0.5 s window),
  long long seconds = 0;
  LiveOutputOptions options;
  options.status_line = false;
  options.clock = [&] { return std::chrono::steady_clock::time_point{} + std::chrono::seconds(++seconds); };
  LiveOutput live(printer_, workers_, options);
  LogTail follower(dir_.path(), workers_, live);
  append(0, "x\nz\n");
  append(1, "y\nx\nz\n");
  // when the logs are read in one pass,
  follower.finish();
  // then the lines are collapsed as if read at once.
  EXPECT_EQ(slurp(out_), "[w1 h1] y\n[w0-1] x\n[w0-1] z\n");
}

// A data-parallel job's log: the same steps on every worker, every 10th step a
// line of the worker's own, every 100th a `\r` bar, once a line over 64 KiB.
std::string training_log(int worker, int from, int to) {
  std::string log;
  for (int step = from; step < to; ++step) {
    log += "step " + std::to_string(step) + " loss " + std::to_string(1000.0 / (step + 1)) + "\n";
    if (step % 10 == 9) log += "w" + std::to_string(worker) + " at step " + std::to_string(step) + "\n";
    if (step % 100 == 0) log += "\reval 10%\reval 60%\reval 100% " + std::to_string(step) + "\n";
    if (step == 777) log += std::string(70 * 1024, 'z') + "\n";
  }
  return log;
}

TEST(LogTailWholeTest, ReadingFinishedLogsPrintsWhatFollowingThemPrinted) {
  // Given 3 workers' logs of 60,000 steps (about 2 MiB each: many 64 KiB
  // chunks, and past the 4 MiB bound of held text),
  const std::vector<Worker> workers{Worker{0, "h0", 22}, Worker{1, "h1", 22}, Worker{2, "h2", 22}};
  constexpr int kSteps = 60'000;
  auto print = [&](const std::function<void(testing::TempDir&, LogTail&)>& read) {
    testing::TempDir dir;
    std::FILE* out = std::tmpfile();
    std::FILE* err = std::tmpfile();
    LinePrinter printer(out, err, false, false);
    LiveOutputOptions options;
    options.status_line = false;
    options.clock = [] { return std::chrono::steady_clock::time_point{}; };
    LiveOutput live(printer, workers, options);
    LogTail follower(dir.path(), workers, live);
    read(dir, follower);
    const std::string text = slurp(out);
    std::fclose(out);
    std::fclose(err);
    return text;
  };
  auto append = [](testing::TempDir& dir, int worker, const std::string& text) {
    std::ofstream(dir.path() + "/worker" + std::to_string(worker) + ".log", std::ios::app) << text;
  };
  // when `logs RUN` reads them whole, after the job,
  const std::string whole = print([&](testing::TempDir& dir, LogTail& follower) {
    for (int w = 0; w < 3; ++w) append(dir, w, training_log(w, 0, kSteps));
    follower.finish();
  });
  // and when a follower read them as they grew, by pieces of every size,
  // pass by pass (the workers in step: lines of different workers come out in
  // the order they were read, so one ahead of its peers shows its own lines
  // first),
  const std::string followed = print([&](testing::TempDir& dir, LogTail& follower) {
    for (int from = 0, piece = 1; from < kSteps; from += piece, piece = piece * 7 % 2003) {
      for (int w = 0; w < 3; ++w) append(dir, w, training_log(w, from, std::min(kSteps, from + piece)));
      follower.drain(std::vector<int>{0, 1, 2});
      while (!follower.behind().empty()) follower.drain(follower.behind());
    }
    follower.finish();
  });
  // then both print the same, every step once for all three workers.
  // (Not EXPECT_EQ: gtest's diff of two 2 MiB texts takes gigabytes.)
  EXPECT_TRUE(whole == followed) << "they differ from byte "
                                 << std::mismatch(whole.begin(), whole.end(), followed.begin(), followed.end()).first -
                                        whole.begin();
  EXPECT_EQ(std::count(whole.begin(), whole.end(), '\n'), kSteps + kSteps / 100 + 1 + 3 * (kSteps / 10));
  EXPECT_NE(whole.find("[w0-2] step 59999 loss"), std::string::npos);
  EXPECT_NE(whole.find("[w0-2] eval 100% 59900\n"), std::string::npos);
  EXPECT_NE(whole.find("[w0-2] " + std::string(64 * 1024, 'z') + " ... [line cut at 64 KiB]\n"), std::string::npos);
}

}  // namespace
}  // namespace tpurun

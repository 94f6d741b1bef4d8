#include "tpurun/fanout/line_splitter.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tpurun {
namespace {

struct Fed {
  LineSplitter splitter;
  std::vector<std::string> lines;
  void feed(std::string_view data) {
    splitter.feed(data, [&](std::string_view line) { lines.emplace_back(line); });
  }
};

TEST(LineSplitterTest, CarriageReturnRedrawsKeepOnlyTheFinalState) {
  Fed f;
  // Given a progress bar redrawn with \r, then finished with a newline,
  f.feed("a\rb\rc\n");
  // then the line is its final state.
  EXPECT_EQ(f.lines, std::vector<std::string>{"c"});
}

TEST(LineSplitterTest, ProgressIsTheLatestRedrawnStateUntilTheNewline) {
  Fed f;
  // Given tqdm's redraws ("\r" first, then the bar) arriving in chunks,
  f.feed("\r 10%|#   |");
  // then the progress state is the latest one, and no line is printed yet;
  EXPECT_EQ(f.splitter.progress(), " 10%|#   |");
  f.feed("\r 50%|##  |\r100%");
  EXPECT_EQ(f.splitter.progress(), "100%");
  EXPECT_EQ(f.splitter.progress(2), "10");
  f.feed("|###|");
  EXPECT_EQ(f.splitter.progress(), "100%|###|");
  EXPECT_TRUE(f.lines.empty());
  // when the bar closes with a newline, its final state is the line and the state is gone.
  f.feed("\n");
  EXPECT_EQ(f.lines, std::vector<std::string>{"100%|###|"});
  EXPECT_EQ(f.splitter.progress(), "");
}

TEST(LineSplitterTest, AnUnfinishedPlainLineIsNoProgress) {
  Fed f;
  f.feed("Loading checkpoint...");
  EXPECT_EQ(f.splitter.progress(), "");
  f.feed(" 50%\r");
  EXPECT_EQ(f.splitter.progress(), "Loading checkpoint... 50%");
}

TEST(LineSplitterTest, CrLfEndsALineWithoutLosingIt) {
  Fed f;
  f.feed("windows\r");
  f.feed("\nnext\r\n\n");
  EXPECT_EQ(f.lines, (std::vector<std::string>{"windows", "next", ""}));
}

TEST(LineSplitterTest, FinishReturnsTheUnfinishedLineOrItsLastRedraw) {
  Fed f;
  f.feed("done\nhalf");
  EXPECT_EQ(f.splitter.finish(), "half");
  EXPECT_EQ(f.splitter.finish(), std::nullopt);
  f.feed("step 1\rstep 2\r");
  EXPECT_EQ(f.splitter.finish(), "step 2");
}

TEST(LineSplitterTest, LineLongerThan64KiBIsCutWithANoteAndItsRestDropped) {
  Fed f;
  // Given a 100 KiB line arriving in 1000-byte chunks, then a short line,
  const std::string chunk(1000, 'x');
  for (int i = 0; i < 100; ++i) f.feed(chunk);
  f.feed("\nafter\n");
  // then the long line is cut at 64 KiB with a note, and the next line is intact.
  ASSERT_EQ(f.lines.size(), 2u);
  EXPECT_EQ(f.lines[0], std::string(LineSplitter::kMaxLine, 'x') + std::string(LineSplitter::kCutNote));
  EXPECT_EQ(f.lines[1], "after");
}

TEST(LineSplitterTest, LineOfExactly64KiBIsKeptWhole) {
  Fed f;
  f.feed(std::string(LineSplitter::kMaxLine, 'y'));
  f.feed("\n");
  ASSERT_EQ(f.lines.size(), 1u);
  EXPECT_EQ(f.lines[0], std::string(LineSplitter::kMaxLine, 'y'));
}

TEST(LineSplitterTest, CutNeverSplitsAUtf8Character) {
  Fed f;
  // Given a line whose 64 KiB bound falls inside a 3-byte character (€),
  std::string text(LineSplitter::kMaxLine - 1, 'a');
  text += "\xE2\x82\xAC tail\n";
  f.feed(text);
  // then the cut drops the whole character rather than half of it.
  ASSERT_EQ(f.lines.size(), 1u);
  EXPECT_EQ(f.lines[0], std::string(LineSplitter::kMaxLine - 1, 'a') + std::string(LineSplitter::kCutNote));
}

TEST(LineSplitterTest, WhereTheDataIsCutChangesNoLine) {
  // Given text with plain lines, redraws, empty lines and CRLF,
  const std::string text = "first\n\nbar 1\rbar 2\rbar 3\nwin\r\n\r\nx\r\ry\n\rlast\rline";
  Fed whole;
  whole.feed(text);
  whole.lines.push_back(whole.splitter.finish().value_or("-"));
  ASSERT_EQ(whole.lines, (std::vector<std::string>{"first", "", "bar 3", "win", "", "y", "line"}));
  // then the same lines come out when it arrives cut in two anywhere, or byte by byte.
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    Fed f;
    f.feed(std::string_view(text).substr(0, cut));
    f.feed(std::string_view(text).substr(cut));
    f.lines.push_back(f.splitter.finish().value_or("-"));
    EXPECT_EQ(f.lines, whole.lines) << "cut at " << cut;
  }
  Fed bytes;
  for (char c : text) bytes.feed(std::string_view(&c, 1));
  bytes.lines.push_back(bytes.splitter.finish().value_or("-"));
  EXPECT_EQ(bytes.lines, whole.lines);
}

TEST(LineSplitterTest, EndlessRedrawsKeepMemoryBounded) {
  Fed f;
  // Given a progress bar that redraws a long state many times and never ends its line,
  const std::string state(50 * 1024, 'p');
  for (int i = 0; i < 50; ++i) f.feed(state + "\r");
  // then only the latest state is kept.
  EXPECT_EQ(f.splitter.progress().size(), state.size());
  EXPECT_TRUE(f.lines.empty());
}

}  // namespace
}  // namespace tpurun

// --watch: the interval, and lines cut to the terminal's width.
#include "tpurun/ui/board_watch.hpp"

#include <gtest/gtest.h>

#include "tpurun/pod/worker_select.hpp"
#include "ui/watch_terminal.hpp"

namespace tpurun {
namespace {

TEST(WatchIntervalTest, DefaultPlainSecondsAndUnits) {
  EXPECT_EQ(parse_watch_interval(""), std::chrono::seconds(5));
  EXPECT_EQ(parse_watch_interval("2"), std::chrono::seconds(2));
  EXPECT_EQ(parse_watch_interval("500ms"), std::chrono::milliseconds(500));
  EXPECT_EQ(parse_watch_interval("1m"), std::chrono::minutes(1));
}

TEST(WatchIntervalTest, TooShortOrJunkSaysWhatToGive) {
  for (const char* bad : {"0", "50ms", "3x", "-1"}) {
    try {
      parse_watch_interval(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--watch ") + bad + ":"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("e.g. --watch 5"), std::string::npos) << e.what();
    }
  }
}

TEST(FitWidthTest, CutsAtColumnsNotBytes) {
  EXPECT_EQ(fit_width("board-a  free", 7), "board-a");
  EXPECT_EQ(fit_width("short", 80), "short");
  EXPECT_EQ(fit_width("a\u2014b\u2014c", 3), "a\u2014b");  // an em dash is one column
  EXPECT_EQ(fit_width("abc", 0), "");
}

}  // namespace
}  // namespace tpurun

#include "tpurun/util/text.hpp"

#include <gtest/gtest.h>

namespace tpurun {
namespace {

TEST(ShortCommandTest, AbsolutePathsLoseTheirDirectories) {
  EXPECT_EQ(short_command("/usr/bin/python3 /home/bob/proj/train.py --out=/tmp/x /"),
            "python3 train.py --out=/tmp/x /");
  EXPECT_EQ(short_command("python3  -m a.b"), "python3  -m a.b");
}

TEST(TruncateTextTest, CountsCharactersNotBytes) {
  EXPECT_EQ(truncate_text("short", 10), "short");
  EXPECT_EQ(truncate_text("python3 train.py --very-long", 12), "python3 t...");
  EXPECT_EQ(truncate_text("日本語日本語日本語", 6), "日本語...");
}

}  // namespace
}  // namespace tpurun

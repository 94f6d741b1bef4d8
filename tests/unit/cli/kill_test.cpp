#include "cli/kill.hpp"

#include <gtest/gtest.h>

#include "tpurun/pod/worker_select.hpp"

namespace tpurun::cli {
namespace {

TEST(ParseGraceTest, Units) {
  EXPECT_EQ(parse_grace("10s"), 10000);
  EXPECT_EQ(parse_grace("2.5s"), 2500);
  EXPECT_EQ(parse_grace("500ms"), 500);
  EXPECT_EQ(parse_grace("1m"), 60000);
  EXPECT_EQ(parse_grace("3"), 3000);
  EXPECT_THROW(parse_grace("soon"), UsageError);
  EXPECT_THROW(parse_grace("-1s"), UsageError);
  EXPECT_THROW(parse_grace("2d"), UsageError);
}

TEST(ParseGraceTest, AtMostAnHourForKillAndStageAlike) {
  EXPECT_EQ(parse_grace("1h"), 3600 * 1000);
  EXPECT_THROW(parse_grace("61m"), UsageError);
}

}  // namespace
}  // namespace tpurun::cli

#include "tpurun/util/duration.hpp"

#include <gtest/gtest.h>

#include "tpurun/pod/worker_select.hpp"

namespace tpurun {
namespace {

TEST(ParseDurationTest, AcceptsUnitsAndPlainSeconds) {
  using std::chrono::milliseconds;
  EXPECT_EQ(parse_duration("10s"), milliseconds(10000));
  EXPECT_EQ(parse_duration("30"), milliseconds(30000));
  EXPECT_EQ(parse_duration("500ms"), milliseconds(500));
  EXPECT_EQ(parse_duration("1.5m"), milliseconds(90000));
  EXPECT_EQ(parse_duration("2h"), milliseconds(7200000));
  EXPECT_EQ(parse_duration("14d"), milliseconds(14LL * 86400000));
}

TEST(ParseDurationTest, RejectsJunkWithTheText) {
  for (const char* bad : {"", "s", "10x", "ten", "1.2.3s", "-5s"}) {
    try {
      parse_duration(bad);
      ADD_FAILURE() << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(ParseDurationTest, AHugeDurationIsRefusedNotWrappedAround) {
  // 99999999999999d overflowed into a negative wait: kill --grace killed at once
  for (const char* huge : {"99999999999999d", "1e300s", "3651d"}) {
    EXPECT_THROW(parse_duration(huge), UsageError) << huge;
  }
  EXPECT_EQ(parse_duration("3650d").count(), 3650LL * 86400 * 1000);
}

TEST(FormatAgeTest, CompactForTables) {
  EXPECT_EQ(format_age(45), "45s");
  EXPECT_EQ(format_age(720), "12m");
  EXPECT_EQ(format_age(7384), "2h03m");
  EXPECT_EQ(format_age(3 * 86400 + 4 * 3600), "3d04h");
}

TEST(UtcTimeTest, WrittenAndReadBackToTheSecond) {
  using namespace std::chrono;
  const system_clock::time_point t = system_clock::from_time_t(1795545387) + milliseconds(900);
  EXPECT_EQ(format_utc_time(t), "2026-11-24T18:36:27Z");
  EXPECT_EQ(parse_utc_time(format_utc_time(t)), system_clock::from_time_t(1795545387));
  EXPECT_EQ(format_utc_time(system_clock::from_time_t(0)), "1970-01-01T00:00:00Z");
  EXPECT_FALSE(parse_utc_time("2026-11-24 18:36:27"));
  EXPECT_FALSE(parse_utc_time("2026-11-24T18:36:27Zjunk"));
}

}  // namespace
}  // namespace tpurun

#include "pod/config_values.hpp"

#include <gtest/gtest.h>

#include "tpurun/pod/config.hpp"

namespace tpurun {
namespace {

TEST(ByteSizeTest, PlainNumbersAreBytes) {
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("18446744073709551615"),
            18446744073709551615ull);  // exact, not via double
  EXPECT_EQ(parse_byte_size("18446744073709551616"), std::nullopt);
}

TEST(ByteSizeTest, DecimalAndBinaryUnits) {
  EXPECT_EQ(parse_byte_size("500MB"), 500'000'000u);
  EXPECT_EQ(parse_byte_size("1GiB"), 1ull << 30);
  EXPECT_EQ(parse_byte_size("1.5 GiB"), 3ull << 29);
  EXPECT_EQ(parse_byte_size("2kb"), 2000u);
  EXPECT_EQ(parse_byte_size(" 3 TiB "), 3ull << 40);
  EXPECT_EQ(parse_byte_size("10B"), 10u);
}

TEST(ByteSizeTest, RejectsNonsense) {
  for (const char* bad : {"", "GiB", "1 GB GB", "1.GiB", ".5GiB", "1..5GB", "-1GB", "1e9", "1 K",
                          "1 PB", "99999999TiB"})
    EXPECT_EQ(parse_byte_size(bad), std::nullopt) << bad;
}

TEST(HostKeyPolicyTest, RoundTrips) {
  for (HostKeyPolicy p : {HostKeyPolicy::strict, HostKeyPolicy::accept_new, HostKeyPolicy::off})
    EXPECT_EQ(parse_host_key_policy(to_string(p)), p);
  EXPECT_EQ(parse_host_key_policy("accept_new"), std::nullopt);
  EXPECT_EQ(parse_host_key_policy("Strict"), std::nullopt);
}

TEST(HostPortTest, ParsesHostsPortsAndBracketedIpv6) {
  auto hp = parse_host_port("10.0.0.5");
  ASSERT_TRUE(hp);
  EXPECT_EQ(hp->host, "10.0.0.5");
  EXPECT_EQ(hp->port, 22);
  hp = parse_host_port("[fe80::1%eth0]:2222");
  ASSERT_TRUE(hp);
  EXPECT_EQ(hp->host, "fe80::1%eth0");
  EXPECT_EQ(hp->port, 2222);
  hp = parse_host_port("t1v-n-abc-w-0.example:65535");
  ASSERT_TRUE(hp);
  EXPECT_EQ(hp->port, 65535);
}

TEST(HostPortTest, ExplainsBadAddresses) {
  EXPECT_EQ(parse_host_port("h:65536").error(), "port '65536' is not a number from 1 to 65535");
  EXPECT_EQ(parse_host_port("[::1]x").error(), "unexpected 'x' after ']'");
  EXPECT_EQ(parse_host_port("[::1]:").error(), "missing port after ':'");
  EXPECT_EQ(parse_host_port("[]").error(), "brackets are only for IPv6 addresses");
  EXPECT_EQ(parse_host_port(":22").error(), "empty host");
  EXPECT_EQ(parse_host_port("ssh://h").error(), "write \"host\" or \"host:port\", not a URL");
  EXPECT_EQ(parse_host_port("fe80::1").error(),
            "write IPv6 addresses in brackets, e.g. \"[::1]:22\"");
  EXPECT_EQ(parse_host_port("h/x").error(), "'/' is not allowed in a host name or address");
  EXPECT_EQ(parse_host_port("h\x01").error(),
            "control and non-ASCII characters are not allowed in a host name or address");
}

TEST(ConfigErrorTest, FormatsLocationLikeACompiler) {
  EXPECT_STREQ(ConfigError("f.json", 3, "bad").what(), "f.json:3: bad");
  EXPECT_STREQ(ConfigError("f.json", 3, 7, "bad").what(), "f.json:3:7: bad");
  EXPECT_STREQ(ConfigError("f.json", 0, "bad").what(), "f.json: bad");
  EXPECT_STREQ(ConfigError("", 0, "bad").what(), "bad");
}

}  // namespace
}  // namespace tpurun

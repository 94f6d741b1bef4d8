#include "tpurun/util/suggest.hpp"

#include <gtest/gtest.h>

namespace tpurun {
namespace {

const std::vector<std::string> kSshKeys = {"user", "identity_file", "known_hosts",
                                           "host_key_policy", "connect_timeout_s"};

TEST(SuggestTest, TranspositionCountsAsOneEdit) {
  EXPECT_EQ(closest_match("hots_key_policy", kSshKeys), "host_key_policy");
}

TEST(SuggestTest, FindsMissingAndExtraLetters) {
  EXPECT_EQ(closest_match("usr", kSshKeys), "user");
  EXPECT_EQ(closest_match("knownhosts", kSshKeys), "known_hosts");
  EXPECT_EQ(closest_match("connect_timeout", kSshKeys), "connect_timeout_s");
}

TEST(SuggestTest, IgnoresCase) { EXPECT_EQ(closest_match("SIM", {"sim", "v4-32"}), "sim"); }

TEST(SuggestTest, UniquePrefixMatches) {
  // given a pod name typed short
  EXPECT_EQ(closest_match("v4", {"sim", "v4-32"}), "v4-32");
  // but an ambiguous prefix suggests nothing
  EXPECT_EQ(closest_match("v4", {"v4-32", "v4-64"}), std::nullopt);
}

TEST(SuggestTest, NothingCloseMeansNoSuggestion) {
  EXPECT_EQ(closest_match("banana", kSshKeys), std::nullopt);
  EXPECT_EQ(closest_match("", kSshKeys), std::nullopt);
  EXPECT_EQ(closest_match("x", {}), std::nullopt);
}

TEST(SuggestTest, ThresholdGrowsWithLength) {
  // given a short word, two edits are too many
  EXPECT_EQ(closest_match("abc", {"xyc"}), std::nullopt);
  // given a long word, two edits are fine
  EXPECT_EQ(closest_match("staging_rooot_", {"staging_root"}), "staging_root");
}

TEST(SuggestTest, ExactMatchWinsOverPrefix) {
  EXPECT_EQ(closest_match("sim", {"sim", "sim2"}), "sim");
}

TEST(SuggestTest, HugeWordIsCheap) {
  // given a megabyte-long unknown key, the answer comes without a huge table
  EXPECT_EQ(closest_match(std::string(1 << 20, 'u'), kSshKeys), std::nullopt);
}

TEST(DidYouMeanTest, FormatsTheHint) {
  EXPECT_EQ(did_you_mean("simm", {"sim", "v4-32"}), " (did you mean 'sim'?)");
  EXPECT_EQ(did_you_mean("zzzz", {"sim", "v4-32"}), "");
}

}  // namespace
}  // namespace tpurun

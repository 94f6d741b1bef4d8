#include "staging/ignore_rules.hpp"

#include <gtest/gtest.h>

namespace tpurun::staging {
namespace {

IgnoreRules rules(const char* text) {
  IgnoreRules r;
  r.add_text(text);
  return r;
}

TEST(IgnoreRulesTest, PatternWithoutSlashMatchesAtAnyDepth) {
  auto r = rules("*.ckpt\n");
  EXPECT_TRUE(r.ignored("model.ckpt", false));
  EXPECT_TRUE(r.ignored("runs/a/model.ckpt", false));
  EXPECT_FALSE(r.ignored("model.ckpt.py", false));
}

TEST(IgnoreRulesTest, LeadingSlashAnchorsAtTheRoot) {
  auto r = rules("/data\n");
  EXPECT_TRUE(r.ignored("data/train.bin", false));
  EXPECT_FALSE(r.ignored("src/data/loader.py", false));
}

TEST(IgnoreRulesTest, TrailingSlashMatchesDirectoriesOnly) {
  auto r = rules("logs/\n");
  EXPECT_TRUE(r.ignored("logs/run1.txt", false));
  EXPECT_TRUE(r.ignored("exp/logs/run1.txt", false));
  EXPECT_FALSE(r.ignored("logs", false));  // a file named logs stays
}

TEST(IgnoreRulesTest, QuestionMarkAndStarStayWithinOneSegment) {
  auto r = rules("a/?.txt\nb/*\n");
  EXPECT_TRUE(r.ignored("a/x.txt", false));
  EXPECT_FALSE(r.ignored("a/xy.txt", false));
  EXPECT_TRUE(r.ignored("b/c", false));
  EXPECT_TRUE(r.ignored("b/c/d", false));  // through the ignored directory b/c
  EXPECT_FALSE(r.ignored("x/b/c", false));
}

TEST(IgnoreRulesTest, DoubleStarMatchesAnyNumberOfDirectories) {
  auto r = rules("**/cache\nout/**/*.npy\nbig/**\n");
  EXPECT_TRUE(r.ignored("cache", true));
  EXPECT_TRUE(r.ignored("a/b/cache/x", false));
  EXPECT_TRUE(r.ignored("out/x.npy", false));
  EXPECT_TRUE(r.ignored("out/a/b/x.npy", false));
  EXPECT_FALSE(r.ignored("other/x.npy", false));
  EXPECT_TRUE(r.ignored("big/a", false));
  EXPECT_FALSE(r.matches("big", true));  // "big/**" is what is inside, not big itself
}

TEST(IgnoreRulesTest, NegationReincludesAndTheLastMatchWins) {
  auto r = rules("# weights\n*.bin\n!keep.bin\n");
  EXPECT_TRUE(r.ignored("w.bin", false));
  EXPECT_FALSE(r.ignored("keep.bin", false));
  EXPECT_FALSE(r.ignored("sub/keep.bin", false));
}

TEST(IgnoreRulesTest, NothingInsideAnIgnoredDirectoryComesBack) {
  auto r = rules("data/\n!data/small.txt\n");
  EXPECT_TRUE(r.ignored("data/small.txt", false));
}

TEST(IgnoreRulesTest, CommentsBlankLinesAndEscapes) {
  auto r = rules("\n# not a pattern\n\\#literal\n  \n");
  EXPECT_FALSE(r.ignored("# not a pattern", false));
  EXPECT_TRUE(r.ignored("#literal", false));
}

TEST(IgnoreRulesTest, WalkDefaultsSkipVcsAndPythonCaches) {
  auto r = IgnoreRules::walk_defaults();
  EXPECT_TRUE(r.ignored(".git/config", false));
  EXPECT_TRUE(r.ignored("pkg/__pycache__/m.cpython-311.pyc", false));
  EXPECT_TRUE(r.ignored("m.pyc", false));
  EXPECT_TRUE(r.ignored("nb/.ipynb_checkpoints/a.ipynb", false));
  EXPECT_TRUE(r.ignored(".pytest_cache/v", false));
  EXPECT_TRUE(r.ignored(".mypy_cache/x", false));
  EXPECT_FALSE(r.ignored("main.py", false));
}

}  // namespace
}  // namespace tpurun::staging

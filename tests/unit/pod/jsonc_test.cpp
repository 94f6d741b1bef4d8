#include "pod/jsonc.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tpurun/pod/config.hpp"

namespace tpurun::jsonc {
namespace {

using ::testing::HasSubstr;

std::string syntax_error(const std::string& text) {
  try {
    parse(text, "f.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(JsoncTest, ParsesPlainJson) {
  Document doc = parse(
      R"({"a": [1, -2, 3.5, 1e3], "b": {"c": "d"}, "t": true, "f": false, "n": null})", "f.json");
  EXPECT_EQ(doc.value["a"][0], 1);
  EXPECT_EQ(doc.value["a"][1], -2);
  EXPECT_DOUBLE_EQ(doc.value["a"][2].get<double>(), 3.5);
  EXPECT_DOUBLE_EQ(doc.value["a"][3].get<double>(), 1000.0);
  EXPECT_EQ(doc.value["b"]["c"], "d");
  EXPECT_EQ(doc.value["t"], true);
  EXPECT_EQ(doc.value["f"], false);
  EXPECT_TRUE(doc.value["n"].is_null());
}

TEST(JsoncTest, SkipsLineAndBlockComments) {
  // given comments everywhere whitespace may go, including "//" inside strings
  Document doc = parse(R"(// leading
{ /* before key */ "url": "http://x//y", // trailing
  "n": /* inline */ 1 /* multi
  line */ }
// the end)",
                       "f.json");
  EXPECT_EQ(doc.value["url"], "http://x//y");
  EXPECT_EQ(doc.value["n"], 1);
}

TEST(JsoncTest, AllowsTrailingCommas) {
  Document doc = parse(R"({"a": [1, 2,], "b": {"c": 1,},})", "f.json");
  EXPECT_EQ(doc.value["a"].size(), 2u);
  EXPECT_EQ(doc.value["b"]["c"], 1);
}

TEST(JsoncTest, RejectsLoneCommas) {
  EXPECT_THAT(syntax_error("[,]"), HasSubstr("expected a value"));
  EXPECT_THAT(syntax_error("{,}"), HasSubstr("expected a string key or '}', found ','"));
  EXPECT_THAT(syntax_error("[1,,]"), HasSubstr("expected a value"));
}

TEST(JsoncTest, RecordsTheLineOfEveryKeyAndElement) {
  Document doc = parse(R"({
  "pods": {
    "sim": {
      "workers": [
        "a",

        "b"
      ],
      "ssh": { "user": "alice" }
    }
  }
})",
                       "f.json");
  EXPECT_EQ(doc.lines.at(""), 1);
  EXPECT_EQ(doc.lines.at("/pods"), 2);
  EXPECT_EQ(doc.lines.at("/pods/sim"), 3);
  EXPECT_EQ(doc.lines.at("/pods/sim/workers"), 4);
  EXPECT_EQ(doc.lines.at("/pods/sim/workers/0"), 5);
  EXPECT_EQ(doc.lines.at("/pods/sim/workers/1"), 7);
  EXPECT_EQ(doc.lines.at("/pods/sim/ssh/user"), 9);
}

TEST(JsoncTest, EscapesPointerSegments) {
  Document doc = parse(R"({"a/b": {"c~d": 1}})", "f.json");
  EXPECT_EQ(doc.lines.count("/a~1b/c~0d"), 1u);
}

TEST(JsoncTest, SyntaxErrorsGiveLineColumnAndWhatWasExpected) {
  EXPECT_EQ(syntax_error("{\n  \"a\": 1\n  \"b\": 2\n}"),
            "f.json:3:3: expected ',' or '}' after the value of \"a\", found '\"'");
  EXPECT_EQ(syntax_error("{\"a\" 1}"), "f.json:1:6: expected ':' after key \"a\", found '1'");
  EXPECT_EQ(syntax_error("[1, 2"),
            "f.json:1:6: expected ',' or ']' after an array element, found end of input");
  EXPECT_EQ(syntax_error(""), "f.json:1:1: expected a JSON object, found an empty file");
}

TEST(JsoncTest, ErrorsCarryLineAndColumnFields) {
  try {
    parse("{\n\n   x}", "f.json");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), "f.json");
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.column(), 4);
  }
}

TEST(JsoncTest, HintsAtCommonNonJsonHabits) {
  EXPECT_THAT(syntax_error("{user: 1}"),
              HasSubstr("found 'user' (strings and keys need double quotes)"));
  EXPECT_THAT(syntax_error("{'a': 1}"), HasSubstr("(JSON strings use double quotes)"));
  EXPECT_THAT(syntax_error("{\"a\": True}"), HasSubstr("found 'True'"));
  EXPECT_THAT(syntax_error("{\"a\": NaN}"), HasSubstr("found 'NaN'"));
}

TEST(JsoncTest, DuplicateKeysNameBothLines) {
  EXPECT_EQ(syntax_error("{\n \"a\": 1,\n \"b\": 2,\n \"a\": 3\n}"),
            "f.json:4:2: duplicate key \"a\" (first defined on line 2)");
}

TEST(JsoncTest, SameKeyInDifferentObjectsIsFine) {
  EXPECT_NO_THROW(parse(R"({"x": {"a": 1}, "y": {"a": 2}})", "f.json"));
}

TEST(JsoncTest, DecodesStringEscapes) {
  Document doc =
      parse(R"(["a\"b\\c\/d\b\f\n\r\t", "\u00e9\u20ac", "\ud83d\ude00", "é"])", "f.json");
  EXPECT_EQ(doc.value[0], "a\"b\\c/d\b\f\n\r\t");
  EXPECT_EQ(doc.value[1], "\xc3\xa9\xe2\x82\xac");
  EXPECT_EQ(doc.value[2], "\xf0\x9f\x98\x80");  // U+1F600 from a surrogate pair
  EXPECT_EQ(doc.value[3], "\xc3\xa9");
}

TEST(JsoncTest, RejectsBadStrings) {
  EXPECT_THAT(syntax_error(R"(["\q"])"), HasSubstr("1:3: invalid escape in string: '\\q'"));
  EXPECT_THAT(syntax_error(R"(["\u12"])"), HasSubstr("expected four hex digits after \\u"));
  EXPECT_THAT(syntax_error(R"(["\ud83d"])"), HasSubstr("high surrogate without a low surrogate"));
  EXPECT_THAT(syntax_error(R"(["\ud83d\u0041"])"),
              HasSubstr("high surrogate without a low surrogate"));
  EXPECT_THAT(syntax_error(R"(["\ude00"])"), HasSubstr("lone low surrogate"));
  EXPECT_THAT(syntax_error("[\"a\nb\"]"),
              HasSubstr("1:2: unterminated string (strings cannot span lines)"));
  EXPECT_THAT(syntax_error("[\"a\tb\"]"), HasSubstr("control character 0x09 in string"));
  EXPECT_THAT(syntax_error("[\"abc"), HasSubstr("unterminated string"));
  EXPECT_THAT(syntax_error("[\"\xff\"]"), HasSubstr("invalid UTF-8 in string (byte 0xff)"));
  EXPECT_THAT(syntax_error("[\"\xc0\xaf\"]"), HasSubstr("invalid UTF-8"));      // overlong '/'
  EXPECT_THAT(syntax_error("[\"\xed\xa0\x80\"]"), HasSubstr("invalid UTF-8"));  // encoded surrogate
}

TEST(JsoncTest, ParsesNumbersStrictly) {
  Document doc = parse("[0, -0, 9223372036854775807, 18446744073709551615, 1e-3, 2E+2]", "f.json");
  EXPECT_TRUE(doc.value[2].is_number_integer());
  EXPECT_TRUE(doc.value[3].is_number_unsigned());
  EXPECT_TRUE(doc.value[4].is_number_float());
  EXPECT_THAT(syntax_error("[01]"), HasSubstr("leading zeros"));
  EXPECT_THAT(syntax_error("[-]"), HasSubstr("expected a digit after '-'"));
  EXPECT_THAT(syntax_error("[1.]"), HasSubstr("expected a digit after '.'"));
  EXPECT_THAT(syntax_error("[1e]"), HasSubstr("expected a digit in the exponent"));
  EXPECT_THAT(syntax_error("[+1]"), HasSubstr("expected a value"));
  EXPECT_THAT(syntax_error("[1e999]"), HasSubstr("1:2: number out of range"));
}

TEST(JsoncTest, RejectsTrailingGarbage) {
  EXPECT_EQ(syntax_error("{}\n}"), "f.json:2:1: unexpected '}' after the end of the document");
  EXPECT_THAT(syntax_error("{} {}"), HasSubstr("after the end of the document"));
}

TEST(JsoncTest, RejectsUnterminatedAndStrayComments) {
  EXPECT_EQ(syntax_error("{} /* never closed"), "f.json:1:4: unterminated /* comment");
  EXPECT_THAT(syntax_error("{} / x"), HasSubstr("unexpected '/'"));
}

TEST(JsoncTest, SkipsByteOrderMark) {
  EXPECT_EQ(parse("\xEF\xBB\xBF{\"a\": 1}", "f.json").value["a"], 1);
}

TEST(JsoncTest, EnforcesTheNestingLimit) {
  // given nesting exactly at the limit, it parses
  std::string ok = std::string(kMaxDepth, '[') + std::string(kMaxDepth, ']');
  EXPECT_NO_THROW(parse(ok, "f.json"));
  // given one level more, it is an error rather than a deep recursion
  std::string deep = std::string(kMaxDepth + 1, '[') + std::string(kMaxDepth + 1, ']');
  EXPECT_THAT(syntax_error(deep), HasSubstr("nesting deeper than 64 levels"));
  // given hostile input, the stack survives
  EXPECT_THAT(syntax_error(std::string(1 << 20, '{')), HasSubstr("expected a string key"));
  EXPECT_THAT(syntax_error(std::string(1 << 20, '[')), HasSubstr("nesting deeper"));
}

TEST(JsoncTest, DescribesNonPrintableBytes) {
  EXPECT_THAT(syntax_error(std::string("{\x01}", 3)), HasSubstr("found byte 0x01"));
}

}  // namespace
}  // namespace tpurun::jsonc
